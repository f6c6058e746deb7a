import test from 'ava';
import { ConfigError, loadApiConfig, loadCliConfig, loadTemporalCliConfig, loadWorkerConfig } from '../../../config';
import { isLoopback, listenProblem } from '../../../config/listen';
import { logLevel } from '../../../config/log';
import { loadNotifyConfig } from '../../../config/notify';
import { API_ENV, WORKER_ENV } from '../../helpers/fixtures';

// The environment parsers (config/*.ts): their defaults, and the one message naming every bad value.

const worker = WORKER_ENV;
const api = API_ENV;
/** The message of the ConfigError `load` throws. */
function problems(load: () => unknown): string {
  try {
    load();
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('the configuration was accepted');
}

test('the Stripe budget is 80 % of the key’s mode: 80/s live, 20/s in a sandbox, sessions never above it', (t) => {
  t.like(loadWorkerConfig(worker), { stripeMaxRequestsPerSecond: 20, stripeMaxSessionsPerSecond: 20 });
  t.like(loadWorkerConfig({ ...worker, STRIPE_SECRET_KEY: 'rk_live_x' }), {
    stripeMaxRequestsPerSecond: 80,
    stripeMaxSessionsPerSecond: 20,
  });
  t.like(loadWorkerConfig({ ...worker, STRIPE_MAX_REQUESTS_PER_SECOND: '5', STRIPE_MAX_SESSIONS_PER_SECOND: '9' }), {
    stripeMaxRequestsPerSecond: 5,
    stripeMaxSessionsPerSecond: 5,
  });
  t.regex(
    problems(() => loadWorkerConfig({ ...worker, STRIPE_MAX_REQUESTS_PER_SECOND: '0.5' })),
    /STRIPE_MAX_REQUESTS_PER_SECOND must be an integer >= 1, got "0\.5"/,
  );
});

test('STRIPE_API_URL other than Stripe needs the emulator, which never runs with a live key', (t) => {
  t.regex(
    problems(() => loadWorkerConfig({ ...worker, STRIPE_API_URL: 'http://127.0.0.1:12111' })),
    /STRIPE_API_URL points at http:\/\/127\.0\.0\.1:12111, not Stripe: set STRIPE_EMULATOR=1/,
  );
  t.regex(
    problems(() => loadWorkerConfig({ ...worker, STRIPE_API_URL: 'http://127.0.0.1:12111/v1' })),
    /STRIPE_API_URL must look like http:\/\/host:port/,
  );
  t.is(
    loadWorkerConfig({ ...worker, STRIPE_API_URL: 'https://api.stripe.com' }).stripeApiUrl,
    'https://api.stripe.com',
  );
  t.regex(
    problems(() => loadWorkerConfig({ ...worker, STRIPE_SECRET_KEY: 'sk_live_x', STRIPE_EMULATOR: '1' })),
    /STRIPE_EMULATOR=1 \(development\) cannot run with a live Stripe key/,
  );
});

test('every missing secret of the API is named at once, and short tokens are allowed only with the emulator', (t) => {
  const message = problems(() => loadApiConfig({}));
  for (const name of [
    'DATABASE_URL',
    'STRIPE_SECRET_KEY',
    'STRIPE_WEBHOOK_SECRET',
    'ADMIN_TOKEN',
    'SUPPORT_TOKEN',
    'BOT_CHECK_SECRET',
  ]) {
    t.regex(message, new RegExp(`- ${name} is required`), name);
  }
  t.regex(message, /BUYER_TOKEN_SECRET or BUYER_JWKS_URL is required/);
  t.regex(message, /^invalid configuration:\n {2}- /);
  t.regex(
    problems(() => loadApiConfig({ ...api, ADMIN_TOKEN: 'short' })),
    /ADMIN_TOKEN must be at least 32 characters/,
  );
  t.notThrows(() =>
    loadApiConfig({ ...api, ADMIN_TOKEN: 'short', STRIPE_EMULATOR: '1', STRIPE_API_URL: 'http://127.0.0.1:1' }),
  );
});

test('a live key beside STRIPE_EMULATOR=1 and short operator tokens: every problem in one list', (t) => {
  const message = problems(() =>
    loadApiConfig({
      ...api,
      STRIPE_SECRET_KEY: 'rk_live_0123456789',
      STRIPE_EMULATOR: '1',
      ADMIN_TOKEN: 'short',
      SUPPORT_TOKEN: 'short-too',
    }),
  );
  t.regex(message, /STRIPE_EMULATOR=1 \(development\) cannot run with a live Stripe key/);
  t.regex(message, /ADMIN_TOKEN must be at least 32 characters/);
  t.regex(message, /SUPPORT_TOKEN must be at least 32 characters/);
});

test('an API beyond loopback needs METRICS_TOKEN; buyer tokens from a JWKS need a room secret of their own', (t) => {
  t.regex(
    problems(() => loadApiConfig({ ...api, HOST: '0.0.0.0' })),
    /METRICS_TOKEN is required when the API listens beyond loopback \(HOST=0\.0\.0\.0\)/,
  );
  t.is(loadApiConfig({ ...api, HOST: '0.0.0.0', METRICS_TOKEN: 'm'.repeat(32) }).metricsToken, 'm'.repeat(32));
  const jwks = { ...api, BUYER_TOKEN_SECRET: '', BUYER_JWKS_URL: 'https://login.example/jwks' };
  t.regex(
    problems(() => loadApiConfig(jwks)),
    /ROOM_TOKEN_SECRET is required when buyer tokens come from BUYER_JWKS_URL/,
  );
  t.regex(
    problems(() => loadApiConfig({ ...jwks, BUYER_JWKS_URL: 'ftp://x' })),
    /BUYER_JWKS_URL must be an http\(s\) URL, got "ftp:\/\/x"/,
  );
  t.regex(
    problems(() => loadApiConfig({ ...api, ROOM_TOKEN_SECRET: 'short' })),
    /ROOM_TOKEN_SECRET must be at least 32 characters/,
  );
  const derived = loadApiConfig(api).roomTokenSecret;
  t.truthy(derived);
  t.not(derived, api.BUYER_TOKEN_SECRET, 'derived, not the buyer secret itself');
  t.is(loadApiConfig(api).roomTokenSecret, derived, 'every API process derives the same');
});

test('the worker’s pool must give up before its activity does; a missing bundle file is named', (t) => {
  t.like(loadWorkerConfig(worker).pool, { connectTimeoutMs: 3_000, statementTimeoutMs: 5_000 });
  t.regex(
    problems(() => loadWorkerConfig({ ...worker, PG_CONNECT_TIMEOUT_MS: '4000', PG_STATEMENT_TIMEOUT_MS: '5000' })),
    /PG_CONNECT_TIMEOUT_MS \+ PG_STATEMENT_TIMEOUT_MS must stay below 9000 ms/,
  );
  t.regex(
    problems(() => loadWorkerConfig({ ...worker, PG_IDLE_TIMEOUT_MS: '10' })),
    /PG_IDLE_TIMEOUT_MS must be an integer >= 1000, got "10"/,
  );
  t.regex(
    problems(() => loadWorkerConfig({ ...worker, WORKFLOW_BUNDLE_PATH: '/no/such/bundle.js' })),
    /WORKFLOW_BUNDLE_PATH=\/no\/such\/bundle\.js does not exist/,
  );
});

test('the CLIs’ Temporal UI link must be http(s); a bad URL is named without echoing a database password', (t) => {
  t.is(loadCliConfig(worker).temporalUiUrl, 'http://127.0.0.1:8233');
  t.regex(
    problems(() => loadCliConfig({ ...worker, TEMPORAL_UI_URL: 'localhost:8233' })),
    /TEMPORAL_UI_URL must be an http\(s\) URL, got "localhost:8233"/,
  );
  const message = problems(() => loadCliConfig({ DATABASE_URL: 'mysql://u:hunter2@db/x' }));
  t.regex(message, /DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL/);
  // Optional for `sagas stuck`, but checked when given: "notaurl" was met as an unknown host "base".
  t.regex(
    problems(() => loadTemporalCliConfig({ DATABASE_URL: 'notaurl' })),
    /DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL/,
  );
  t.is(loadTemporalCliConfig({}).databaseUrl, undefined);
  t.false(message.includes('hunter2'));
});

test('a duration past Node’s longest timer is refused (it would fire after 1 ms), and so is a URL fetch would not take', (t) => {
  t.regex(
    problems(() => loadWorkerConfig({ ...worker, SWEEP_INTERVAL_MS: '3000000000' })),
    /SWEEP_INTERVAL_MS must be at most 2147483647 \(about 24.8 days\), got "3000000000"/,
  );
  t.regex(
    problems(() =>
      loadNotifyConfig({
        NOTIFY_WEBHOOK_URL: 'https://shop.example:99999/hook',
        NOTIFY_WEBHOOK_SECRET: 'n'.repeat(32),
      }),
    ),
    /NOTIFY_WEBHOOK_URL must be an http\(s\) URL, got "https:\/\/shop.example:99999\/hook"/,
  );
  t.regex(
    problems(() => loadApiConfig({ ...api, PURCHASE_TIMEOUT_MS: '2147483648' })),
    /PURCHASE_TIMEOUT_MS must be at most 2147483647/,
  );
  for (const url of ['http://hook host/x', 'http://[bad', 'https://'])
    t.regex(
      problems(() =>
        loadApiConfig({ ...api, BUYER_TOKEN_SECRET: '', BUYER_JWKS_URL: url, ROOM_TOKEN_SECRET: 'r'.repeat(32) }),
      ),
      /BUYER_JWKS_URL must be an http\(s\) URL/,
      url,
    );
  t.is(loadApiConfig({ ...api, PURCHASE_TIMEOUT_MS: '2147483647' }).purchaseTimeoutMs, 2 ** 31 - 1);
});

test('LOG_LEVEL is a pino level in any case, info by default', (t) => {
  t.is(logLevel({}), 'info');
  t.is(logLevel({ LOG_LEVEL: 'WARN' }), 'warn');
  t.throws(() => logLevel({ LOG_LEVEL: 'verbose' }), {
    instanceOf: ConfigError,
    message: /LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent, got "verbose"/,
  });
});

test('a listener that cannot listen names the variable to change', (t) => {
  const s = { port: 80, host: 'shop.internal', portVar: 'PORT', hostVar: 'HOST' };
  const problem = (code: string) => listenProblem(Object.assign(new Error(`listen ${code}`), { code }), s).message;
  t.is(problem('EADDRINUSE'), 'PORT 80 is already in use (EADDRINUSE); set PORT to a free port');
  t.is(problem('EACCES'), 'PORT 80 may not be opened by this user (EACCES); set PORT to 1024 or above');
  for (const code of ['ENOTFOUND', 'EAI_AGAIN', 'EADDRNOTAVAIL'])
    t.regex(problem(code), /^HOST "shop\.internal" is not an address of this machine/);
  t.is(problem('EMFILE'), 'could not listen on HOST "shop.internal", PORT 80: listen EMFILE (EMFILE)');
  t.true(listenProblem(new Error('x'), s) instanceof ConfigError);
});

test('loopback hosts: localhost, 127.0.0.0/8 and ::1 (bracketed or IPv4-mapped), nothing else', (t) => {
  for (const host of ['127.0.0.1', '127.0.0.2', 'localhost', 'LOCALHOST', '::1', '[::1]', '::ffff:127.0.0.1']) {
    t.true(isLoopback(host), host);
  }
  for (const host of ['0.0.0.0', '::', '10.0.0.5', '128.0.0.1', 'shop.internal', '']) t.false(isLoopback(host), host);
});

test('an integer setting is digits: blanks, hex and exponents are refused, naming the setting', (t) => {
  for (const raw of [' ', '0x10', '1e3', '12abc']) {
    t.regex(
      problems(() => loadApiConfig({ ...api, RATE_LIMIT_PER_IP_PER_SECOND: raw })),
      /RATE_LIMIT_PER_IP_PER_SECOND must be an integer >= \d+, got/,
      JSON.stringify(raw),
    );
  }
});
