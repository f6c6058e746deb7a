// `npm run build:temporal-server`: builds the real Temporal server (TEMPORAL_SERVER_VERSION) and its
// SQL tool into the tool cache, once; later calls find them there. CI runs it before `npm test`, so
// the build's minutes show as a step of their own rather than inside the cluster drill's test.
import { findTemporalServer, TEMPORAL_SERVER_VERSION } from './temporal-server';
import { seconds } from './proc';

const started = Date.now();
findTemporalServer((line) => console.log(line)).then(
  (tools) => console.log(`Temporal server ${TEMPORAL_SERVER_VERSION}: ${tools.server} (${seconds(started)})`),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  },
);
