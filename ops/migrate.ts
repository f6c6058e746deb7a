// `npm run migrate`: applies the migrations the database lacks (the API and the worker also do it at
// boot, unless MIGRATE_AT_BOOT=0: then this, or the migrate Job on Kubernetes, runs first).
import { loadCliConfig } from '../config';
import { migrate } from '../store/migrate';
import { runCli } from './cli';

const USAGE = `usage: npm run migrate

Applies every migration in store/migrations/ that the database has not applied yet, recording the
sha256 of each file. Refuses, applying nothing (exit 1), when a migration already applied has been
edited since or is missing on disk: an applied migration is never edited, a change is a new file.
Environment: DATABASE_URL (required).`;

runCli(
  'migrate',
  USAGE,
  (argv) => (argv.includes('--help') || argv.includes('-h') ? 'help' : {}),
  async () => {
    // A refusal (MigrationRefused) is thrown: runCli prints its one line and exits 1.
    const applied = await migrate(loadCliConfig(process.env).databaseUrl, console.log);
    console.log(applied.length ? `${applied.length} migration(s) applied` : 'schema is up to date');
    return 0;
  },
);
