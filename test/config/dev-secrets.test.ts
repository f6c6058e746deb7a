import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { liveSecrets } from '../helpers/fixtures';
import { API_READY, runEntryPoint as run, WORKER_READY, type Ended } from '../helpers/entry-point';
import { devBuyerSecret } from '../../config/buyer-tokens';
import { DEV_DEFAULTS } from '../../config/dev-secrets';

// The development secrets (`npm start`'s fixed tokens and the buyer-token secret it keeps in its
// data folder) are public, so beside a live Stripe key every process refuses them at start: the API,
// the worker and the CLIs, each with one problem line naming the variables that hold one. (What
// each configuration loader answers: test/fast/config/dev-secrets.test.ts.)

const REFUSAL =
  /^ {2}- (.+?) (?:holds a development value|hold development values) \(npm start's, .*\) and cannot run with a live STRIPE_SECRET_KEY: set secrets of your own/;
const STACK_LINE = /^\s+at .+:\d+:\d+\)?$/m;

/** A data folder holding a development buyer-token secret, made as `npm start` makes it. */
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dev-secrets-'));
const devBuyer = devBuyerSecret(dataDir)!;
test.after.always(() => fs.rmSync(dataDir, { recursive: true, force: true }));

/** Each development value under the variable it is refused in. */
const DEV_VALUES: [string, string][] = [
  ...Object.entries(DEV_DEFAULTS),
  ['BUYER_TOKEN_SECRET', devBuyer],
  ['ROOM_TOKEN_SECRET', devBuyer],
];

/** A production environment with a live key and secrets of its own, against the suite's Postgres and Temporal. */
function liveEnv(): Record<string, string> {
  return {
    DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://unset@127.0.0.1:1/x',
    TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:1',
    TEMPORAL_NAMESPACE: process.env.TEMPORAL_NAMESPACE || 'default',
    TASK_QUEUE: `dev-secrets-${randomUUID()}`,
    ...liveSecrets(dataDir),
  };
}

/** Refused at start: `code`, and on stderr one problem line naming exactly `names` (in any order), no stack trace. */
function assertRefused(t: ExecutionContext, ended: Ended, code: number, names: string[], what: string): void {
  t.false(ended.ready, `${what}: refused before it was ready`);
  t.is(ended.code, code, `${what} exits ${code}: ${ended.stderr}`);
  const lines = ended.stderr.split('\n').filter((line) => REFUSAL.test(line));
  t.is(lines.length, 1, `${what}: one refusal line:\n${ended.stderr}`);
  t.deepEqual(
    REFUSAL.exec(lines[0] ?? '')?.[1]
      .split(', ')
      .sort(),
    [...names].sort(),
    `${what}: names ${names.join(', ')}`,
  );
  t.notRegex(ended.stderr + ended.stdout, STACK_LINE, `${what}: no stack trace`);
  t.false(ended.stderr.includes(devBuyer), `${what}: the dev buyer secret is not echoed`);
}

test.serial(
  'the API refuses each development secret beside a live key, exit 1, and starts with secrets of its own',
  async (t) => {
    const [control, ...refused] = await Promise.all([
      run(['api/main.ts'], liveEnv(), API_READY),
      ...DEV_VALUES.map(([name, value]) => run(['api/main.ts'], { ...liveEnv(), [name]: value }, API_READY)),
    ]);
    t.true(control.ready, `the API starts with a live key and secrets of its own:\n${control.stderr}${control.stdout}`);
    t.false(REFUSAL.test(control.stderr));
    DEV_VALUES.forEach(([name], i) => assertRefused(t, refused[i], 1, [name], `the API with a dev ${name}`));
  },
);

test.serial(
  'the worker, which reads none of them, refuses them too (exit 1), and starts with secrets of its own',
  async (t) => {
    const all = Object.fromEntries(DEV_VALUES);
    const [control, refused] = await Promise.all([
      run(['worker/main.ts'], liveEnv(), WORKER_READY),
      run(['worker/main.ts'], { ...liveEnv(), ...all }, WORKER_READY),
    ]);
    t.true(
      control.ready,
      `the worker starts with a live key and secrets of its own:\n${control.stderr}${control.stdout}`,
    );
    t.false(REFUSAL.test(control.stderr));
    assertRefused(
      t,
      refused,
      1,
      [
        'ADMIN_TOKEN',
        'SUPPORT_TOKEN',
        'BOT_CHECK_SECRET',
        'BUYER_TOKEN_SECRET',
        'ROOM_TOKEN_SECRET',
        'STRIPE_WEBHOOK_SECRET',
      ],
      'the worker',
    );
    t.regex(refused.stderr, /^invalid configuration:\n/, 'reported as every configuration problem is');
  },
);

test.serial(
  'the CLIs refuse them with their configuration exit code 2 (1 is a finding), and run with secrets of their own',
  async (t) => {
    const sagas = ['ops/sagas.ts', 'stuck', '--task-queue', `dev-secrets-${randomUUID()}`];
    const withoutSecret = { ...liveEnv(), BUYER_TOKEN_SECRET: '' };
    const [control, refused, tokenControl, token] = await Promise.all([
      run(sagas, liveEnv()),
      run(sagas, {
        ...liveEnv(),
        BOT_CHECK_SECRET: DEV_DEFAULTS.BOT_CHECK_SECRET,
        ADMIN_TOKEN: DEV_DEFAULTS.ADMIN_TOKEN,
      }),
      run(['ops/buyer-token.ts', 'alice'], liveEnv()),
      // No BUYER_TOKEN_SECRET: the CLI falls back on the data folder's development secret.
      run(['ops/buyer-token.ts', 'alice'], withoutSecret),
    ]);
    t.is(control.code, 0, `sagas runs with a live key and secrets of its own: ${control.stderr}`);
    assertRefused(t, refused, 2, ['ADMIN_TOKEN', 'BOT_CHECK_SECRET'], 'sagas');
    t.regex(refused.stderr, /^sagas: invalid configuration:\n/);
    t.is(tokenControl.code, 0, tokenControl.stderr);
    t.regex(tokenControl.stdout, /^ey[\w-]+\.[\w-]+\.[\w-]+\n$/, 'a token signed with the secret given');
    assertRefused(t, token, 2, ['BUYER_TOKEN_SECRET'], 'buyer-token with the development secret');
    t.is(token.stdout, '', 'no token signed with it');
  },
);
