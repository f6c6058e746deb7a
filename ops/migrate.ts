// `npm run migrate`: applies the migrations the database lacks (the API and the worker also do it at
// boot, unless MIGRATE_AT_BOOT=0: then this, or the migrate Job on Kubernetes, runs first).
import { loadCliConfig } from '../config';
import { migrate } from '../store/migrate';
import { runCli } from './cli';
import { parse, USAGE } from './migrate-args';

runCli('migrate', USAGE, parse, async () => {
  // A refusal (MigrationRefused) is thrown: runCli prints its one line and exits 1.
  const applied = await migrate(loadCliConfig(process.env).databaseUrl, console.log);
  console.log(applied.length ? `${applied.length} migration(s) applied` : 'schema is up to date');
  return 0;
});
