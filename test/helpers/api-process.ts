import { randomUUID } from 'node:crypto';
import { freePort } from '../../dev/ports';
import { serviceEnv, startApiProcess, systemSecrets, type NodePart } from '../../dev/local-system';
import { temporalAddress } from './temporal';

/**
 * The real API process (api/main.ts) on a free port, against the suite's Postgres and Temporal, on a
 * task queue of its own, with secrets named by `name` and `env` over its environment.
 */
export async function startTestApi(
  name: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ api: NodePart; url: string; port: number }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const base = serviceEnv({
    databaseUrl: process.env.DATABASE_URL!,
    temporalAddress: temporalAddress(),
    temporalNamespace: 'default',
    taskQueue: `test-${randomUUID()}`,
    emulatorUrl: 'http://127.0.0.1:9',
    publicUrl: url,
    secrets: systemSecrets(name),
  });
  return { api: startApiProcess('api', port, { ...base, ...env }), url, port };
}
