import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { DEFAULT_WEBHOOK_SECRET } from '@flash-sale/stripe-emulator';
import { LIVE_KEY, liveSecrets } from '../../helpers/fixtures';
import {
  ConfigError,
  loadApiConfig,
  loadBuyerTokenCliConfig,
  loadCliConfig,
  loadTemporalCliConfig,
  loadWorkerConfig,
} from '../../../config';
import { devBuyerSecret } from '../../../config/buyer-tokens';
import { DEV_DEFAULTS } from '../../../config/dev-secrets';

// The development secrets (`npm start`'s fixed tokens and the buyer-token secret it keeps in its
// data folder) are public, so beside a live Stripe key every loader refuses them with one problem
// line naming the variables that hold one. (That each process stops on it: test/config/dev-secrets.test.ts.)

const REFUSAL =
  /^ {2}- (.+?) (?:holds a development value|hold development values) \(npm start's, .*\) and cannot run with a live STRIPE_SECRET_KEY: set secrets of your own/;

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

/** A production environment with a live key and secrets of its own (nothing is connected to). */
function liveEnv(): Record<string, string> {
  return {
    DATABASE_URL: 'postgres://unset@127.0.0.1:1/x',
    TEMPORAL_ADDRESS: '127.0.0.1:1',
    TEMPORAL_NAMESPACE: 'default',
    TASK_QUEUE: 'dev-secrets',
    ...liveSecrets(dataDir),
  };
}

test('each development value beside a live key is one problem naming its variable, for every loader', (t) => {
  const loaders: [string, (env: Record<string, string>) => unknown][] = [
    ['api', loadApiConfig],
    ['worker', loadWorkerConfig],
    ['cli', loadCliConfig],
    ['temporal cli', loadTemporalCliConfig],
    ['buyer-token cli', loadBuyerTokenCliConfig],
  ];
  for (const [who, load] of loaders) {
    t.notThrows(() => load(liveEnv()), `${who}: secrets of its own pass with a live key`);
    for (const [name, value] of DEV_VALUES) {
      for (const key of [LIVE_KEY, `rk_live_${'y'.repeat(24)}`]) {
        const err = t.throws(() => load({ ...liveEnv(), STRIPE_SECRET_KEY: key, [name]: value }), {
          instanceOf: ConfigError,
        });
        const lines = err.message.split('\n').filter((line) => REFUSAL.test(line));
        t.is(lines.length, 1, `${who}, ${name}: ${err.message}`);
        t.is(REFUSAL.exec(lines[0])?.[1], name, `${who}: the line names ${name}`);
        t.false(err.message.includes(devBuyer), 'the dev buyer secret is not echoed');
      }
    }
  }
});

test('the development values still run npm start with a test key, and a dev value under another name is refused too', (t) => {
  const dev = {
    ...liveEnv(),
    STRIPE_SECRET_KEY: 'sk_test_emulator',
    STRIPE_API_URL: 'http://127.0.0.1:12111',
    STRIPE_EMULATOR: '1',
    ...Object.fromEntries(DEV_VALUES),
  };
  t.notThrows(() => loadApiConfig(dev));
  t.notThrows(() => loadWorkerConfig(dev));
  const swapped = t.throws(
    () => loadWorkerConfig({ ...liveEnv(), METRICS_TOKEN: DEV_DEFAULTS.ADMIN_TOKEN, NOTIFY_WEBHOOK_SECRET: devBuyer }),
    { instanceOf: ConfigError },
  );
  t.regex(swapped.message, /\n {2}- METRICS_TOKEN, NOTIFY_WEBHOOK_SECRET hold development values/);
  const padded = t.throws(() => loadCliConfig({ ...liveEnv(), SUPPORT_TOKEN: ` ${DEV_DEFAULTS.SUPPORT_TOKEN}\n` }), {
    instanceOf: ConfigError,
  });
  t.regex(padded.message, /- SUPPORT_TOKEN holds a development value/);
  const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'dev-secrets-none-'));
  t.teardown(() => fs.rmSync(elsewhere, { recursive: true, force: true }));
  t.notThrows(
    () => loadApiConfig({ ...liveEnv(), BUYER_TOKEN_SECRET: devBuyer, FLASH_SALE_DATA_DIR: elsewhere }),
    'a secret is a development one only where npm start keeps it',
  );
});

test("the development webhook secret is the payments emulator's own default", (t) => {
  // The emulator (packages/stripe-emulator) signs with it when STRIPE_WEBHOOK_SECRET is unset, so
  // refusing it beside a live key refuses the emulator's too.
  t.is(DEV_DEFAULTS.STRIPE_WEBHOOK_SECRET, DEFAULT_WEBHOOK_SECRET);
});
