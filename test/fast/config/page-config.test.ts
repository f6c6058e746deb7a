import test from 'ava';
import { ConfigError, loadApiConfig, loadWorkerConfig } from '../../../config';
import { API_ENV, WORKER_ENV } from '../../helpers/fixtures';

// The configuration of the buyer's pages: where Checkout returns the buyer (the worker), the
// pages' origin and whether the development sign-in is on (the API).

const common = WORKER_ENV;
const api = API_ENV;

test('Checkout returns the buyer to the purchase page under PUBLIC_URL unless told otherwise', (t) => {
  t.like(loadWorkerConfig({ ...common, PUBLIC_URL: 'https://shop.example/' }), {
    publicUrl: 'https://shop.example',
    checkoutSuccessUrl: 'https://shop.example/purchases/{purchaseId}?result=paid',
    checkoutCancelUrl: 'https://shop.example/purchases/{purchaseId}?result=cancel',
  });
  t.like(
    loadWorkerConfig({
      ...common,
      CHECKOUT_SUCCESS_URL: 'https://shop.example/thanks?order={purchaseId}',
      CHECKOUT_CANCEL_URL: 'https://shop.example/cart?left={purchaseId}',
    }),
    {
      checkoutSuccessUrl: 'https://shop.example/thanks?order={purchaseId}',
      checkoutCancelUrl: 'https://shop.example/cart?left={purchaseId}',
    },
  );
});

test('a Checkout return URL that is not absolute http(s), or has no {purchaseId}, stops the worker naming it', (t) => {
  const err = t.throws(
    () =>
      loadWorkerConfig({
        ...common,
        CHECKOUT_SUCCESS_URL: '/purchases/{purchaseId}',
        CHECKOUT_CANCEL_URL: 'https://shop.example/cart',
        PUBLIC_URL: 'ftp://x',
      }),
    { instanceOf: ConfigError },
  );
  t.regex(err.message, /CHECKOUT_SUCCESS_URL must be an absolute http\(s\) URL/);
  t.regex(err.message, /CHECKOUT_CANCEL_URL must contain \{purchaseId\}/);
  t.regex(err.message, /PUBLIC_URL must be an http\(s\) URL/);
});

test('the development sign-in is on only when DEV_SIGN_IN=1 asks for it, even with the emulator', (t) => {
  const emulator = { ...api, STRIPE_EMULATOR: '1', STRIPE_API_URL: 'http://127.0.0.1:12111' };
  t.false(loadApiConfig(emulator).devSignIn, 'the emulator alone does not turn it on');
  t.false(loadApiConfig({ ...emulator, DEV_SIGN_IN: '0' }).devSignIn);
  t.true(loadApiConfig({ ...emulator, DEV_SIGN_IN: '1' }).devSignIn);
  t.true(loadApiConfig({ ...api, DEV_SIGN_IN: '1' }).devSignIn, 'a test key against Stripe may have it');
  t.false(loadApiConfig(api).devSignIn);
  t.is(loadApiConfig({ ...api, PUBLIC_URL: 'https://shop.example' }).publicUrl, 'https://shop.example');
});

test('DEV_SIGN_IN=1 beside a live Stripe key stops the API naming both variables', (t) => {
  const err = t.throws(() => loadApiConfig({ ...api, STRIPE_SECRET_KEY: 'sk_live_x', DEV_SIGN_IN: '1' }), {
    instanceOf: ConfigError,
  });
  t.regex(err.message, /DEV_SIGN_IN=1 .* cannot run with a live STRIPE_SECRET_KEY/);
  t.notThrows(() => loadApiConfig({ ...api, STRIPE_SECRET_KEY: 'sk_live_x' }), 'a live key alone is fine');
});

test('DEV_SIGN_IN=1 without an HS256 buyer-token secret stops the API naming BUYER_TOKEN_SECRET', (t) => {
  const jwks = {
    ...api,
    BUYER_TOKEN_SECRET: '',
    BUYER_JWKS_URL: 'https://login.example/jwks',
    ROOM_TOKEN_SECRET: 'r'.repeat(32),
    STRIPE_EMULATOR: '1',
  };
  t.false(loadApiConfig(jwks).devSignIn, 'tokens from a JWKS: no sign-in');
  const err = t.throws(() => loadApiConfig({ ...jwks, DEV_SIGN_IN: '1' }), { instanceOf: ConfigError });
  t.regex(err.message, /DEV_SIGN_IN=1 needs BUYER_TOKEN_SECRET/);
  const both = t.throws(() => loadApiConfig({ ...jwks, BUYER_TOKEN_SECRET: 'b'.repeat(32), DEV_SIGN_IN: '1' }), {
    instanceOf: ConfigError,
  });
  t.regex(both.message, /and no BUYER_JWKS_URL/);
  const typo = t.throws(() => loadApiConfig({ ...api, DEV_SIGN_IN: 'yes' }), { instanceOf: ConfigError });
  t.regex(typo.message, /DEV_SIGN_IN must be 0 or 1, got "yes"/);
});

test('a port past 65535, a DATABASE_URL that is no Postgres URL and other problems are named all at once', (t) => {
  const err = t.throws(() => loadApiConfig({ ...api, PORT: '99999', DATABASE_URL: 'garbage', ADMIN_TOKEN: 'short' }), {
    instanceOf: ConfigError,
  });
  t.regex(err.message, /PORT must be a TCP port \(0 to 65535\), got "99999"/);
  t.regex(err.message, /DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL/);
  t.regex(err.message, /ADMIN_TOKEN/);
  t.notRegex(err.message, /garbage/);
  t.throws(() => loadWorkerConfig({ ...common, WORKER_METRICS_PORT: '70000' }), {
    message: /WORKER_METRICS_PORT must be a TCP port/,
  });
  t.like(loadApiConfig({ ...api, PORT: '65535', DATABASE_URL: 'postgresql://u:p@db:5432/shop' }), { port: 65535 });
});
