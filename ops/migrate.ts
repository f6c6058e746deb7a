// `npm run migrate`: applies the migrations the database lacks (the API and the worker also do it at boot).
import { loadCliConfig } from '../config';
import { migrate } from '../store/migrate';
import { runCli } from './cli';

const USAGE = `usage: npm run migrate

Applies every migration in store/migrations/ that the database has not applied yet.
Environment: DATABASE_URL (required).`;

runCli(
  'migrate',
  USAGE,
  (argv) => (argv.includes('--help') || argv.includes('-h') ? 'help' : {}),
  async () => {
    const applied = await migrate(loadCliConfig(process.env).databaseUrl, console.log);
    console.log(applied.length ? `${applied.length} migration(s) applied` : 'schema is up to date');
    return 0;
  },
);
