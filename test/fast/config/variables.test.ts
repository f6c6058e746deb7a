import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { loadApiConfig, loadWorkerConfig } from '../../../config';
import { VARIABLES, variable } from '../../../config/variables';
import { configurationFiles } from '../../../dev/docs/configuration';
import { generatedFiles } from '../../../dev/docs/files';
import { beginMarker } from '../../../dev/docs/markdown';
import { API_ENV, WORKER_ENV } from '../../helpers/fixtures';

// The configuration table (config/variables) is the one source of every variable: the files
// `npm run docs` writes from it are what it would write, every variable the code reads is in it,
// and every row is read somewhere.

const root = path.resolve(__dirname, '../../..');
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');

/** Variables the project reads but does not own: the system's, and the fast tier's runner talking to its own child. */
const NOT_OURS = new Set([
  'PATH',
  'HOME',
  'USER',
  'NODE_ENV',
  'FAST_COVERAGE_DIR',
  'FAST_TEMPORAL_ADDRESS',
  'FAST_WORKFLOW_BUNDLE_PATH',
]);

const SOURCE_DIRS = [
  'api',
  'worker',
  'config',
  'store',
  'activities',
  'workflows',
  'ops',
  'dev',
  'drill',
  'bench',
  'test',
];
const READS = [
  /process\.env\.([A-Z][A-Z0-9_]+)/g,
  /\benv\.([A-Z][A-Z0-9_]+)/g,
  /\benv\[['"]([A-Z][A-Z0-9_]+)['"]\]/g,
  /\br\.(?:raw|int|text|need|postgresUrl)\(\s*['"]([A-Z][A-Z0-9_]+)['"]/g,
];

function sources(): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'histories') walk(rel);
      } else if (entry.name.endsWith('.ts')) files.set(rel, read(rel));
    }
  };
  SOURCE_DIRS.forEach(walk);
  return files;
}

test('every generated file is what `npm run docs` writes (the configuration table, the metrics catalogue)', (t) => {
  for (const { file, render } of generatedFiles()) {
    const current = read(file);
    t.is(render(current), current, `${file} is out of date: run npm run docs`);
  }
});

test('a hand edit of a generated table is caught', (t) => {
  const readme = configurationFiles(VARIABLES).find((g) => g.file === 'README.md')!;
  const edited = read('README.md').replace('| `PORT` | `3000` |', '| `PORT` | `8080` |');
  t.not(edited, read('README.md'), 'the README lists PORT with its default');
  t.not(readme.render(edited), edited);
  t.true(read('docs/configuration.md').includes(beginMarker('config/variables')));
});

test('every variable the code reads is in the table, and every row is read somewhere', (t) => {
  const files = sources();
  const readIn = new Map<string, string>();
  for (const [file, text] of files) {
    for (const pattern of READS) {
      for (const m of text.matchAll(pattern)) if (!readIn.has(m[1])) readIn.set(m[1], file);
    }
  }
  const unlisted = [...readIn].filter(([name]) => !NOT_OURS.has(name) && !VARIABLES.some((v) => v.name === name));
  t.deepEqual(unlisted, [], 'read in the code but missing from config/variables');
  const everything = [...files.values()].join('\n') + read('docker-compose.yml');
  const unread = VARIABLES.filter((v) => !everything.includes(v.name)).map((v) => v.name);
  t.deepEqual(unread, [], 'in config/variables but named nowhere in the code or docker-compose.yml');
});

test("the loaders' defaults are the table's", (t) => {
  const worker = WORKER_ENV;
  const api = loadApiConfig(API_ENV);
  t.is<unknown, unknown>(api.shutdownGraceMs, variable('SHUTDOWN_GRACE_MS').default);
  t.is<unknown, unknown>(api.port, variable('PORT').default);
  t.is<unknown, unknown>(api.host, variable('HOST').default);
  t.is<unknown, unknown>(api.pool.connectTimeoutMs, variable('PG_CONNECT_TIMEOUT_MS').defaultBy?.api);
  const w = loadWorkerConfig(worker);
  t.is<unknown, unknown>(w.pool.connectTimeoutMs, variable('PG_CONNECT_TIMEOUT_MS').defaultBy?.worker);
  t.is<unknown, unknown>(w.maxStripeCalls, variable('WORKER_MAX_STRIPE_CALLS').default);
  t.is<unknown, unknown>(w.taskQueue, variable('TASK_QUEUE').default);
  t.true(api.migrateAtBoot && w.migrateAtBoot, 'MIGRATE_AT_BOOT: 1 unless told otherwise');
});

test('MIGRATE_AT_BOOT is 0 or 1: 0 leaves the migrations to `npm run migrate`, anything else is named', (t) => {
  const env = { DATABASE_URL: 'postgres://x@127.0.0.1/db', STRIPE_SECRET_KEY: 'sk_test_x' };
  t.false(loadWorkerConfig({ ...env, MIGRATE_AT_BOOT: '0' }).migrateAtBoot);
  t.true(loadWorkerConfig({ ...env, MIGRATE_AT_BOOT: '1' }).migrateAtBoot);
  t.throws(() => loadWorkerConfig({ ...env, MIGRATE_AT_BOOT: 'false' }), {
    message: /MIGRATE_AT_BOOT must be 0 or 1, got "false"/,
  });
});

test('a bound comes from the table: a port past 65535 and an integer below its minimum are named', (t) => {
  const err = t.throws(() => loadWorkerConfig({ WORKER_METRICS_PORT: '70000', SWEEP_INTERVAL_MS: '5' }));
  t.regex(err.message, /WORKER_METRICS_PORT must be a TCP port \(0 to 65535\)/);
  t.regex(err.message, new RegExp(`SWEEP_INTERVAL_MS must be an integer >= ${variable('SWEEP_INTERVAL_MS').min}`));
});

test('every row says who reads it and what it is, and an integer read by a loader has a default or says how it is worked out', (t) => {
  for (const v of VARIABLES) {
    t.true(v.readBy.length > 0 && v.doc.length > 0, v.name);
    if (v.min !== undefined && v.readBy.some((r) => r === 'api' || r === 'worker')) {
      t.true(v.default !== undefined || v.defaultBy !== undefined || v.defaultText !== undefined, v.name);
    }
  }
  t.throws(() => variable('NOT_A_VARIABLE'), { message: /not in the configuration table/ });
});
