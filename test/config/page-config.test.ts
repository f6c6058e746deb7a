import test from 'ava';
import { ConfigError, loadApiConfig, loadWorkerConfig } from '../../config';

// The configuration of the buyer's pages: where Checkout returns the buyer (the worker), the
// pages' origin and whether the development sign-in is on (the API).

const common = {
  DATABASE_URL: 'postgres://x@127.0.0.1/db',
  STRIPE_SECRET_KEY: 'sk_test_x',
};
const api = {
  ...common,
  STRIPE_WEBHOOK_SECRET: 'whsec_x',
  ADMIN_TOKEN: 'a'.repeat(32),
  SUPPORT_TOKEN: 's'.repeat(32),
  BUYER_TOKEN_SECRET: 'b'.repeat(32),
};

test('Checkout returns the buyer to the purchase page under PUBLIC_URL unless told otherwise', (t) => {
  t.like(loadWorkerConfig({ ...common, PUBLIC_URL: 'https://shop.example/' }), {
    publicUrl: 'https://shop.example',
    checkoutSuccessUrl: 'https://shop.example/purchases/{purchaseId}',
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

test('the development sign-in is on only with the emulator and an HS256 secret', (t) => {
  t.true(loadApiConfig({ ...api, STRIPE_EMULATOR: '1', STRIPE_API_URL: 'http://127.0.0.1:12111' }).devSignIn);
  t.false(loadApiConfig(api).devSignIn, 'not outside development');
  const jwks = {
    ...api,
    BUYER_TOKEN_SECRET: '',
    BUYER_JWKS_URL: 'https://login.example/jwks',
    ROOM_TOKEN_SECRET: 'r'.repeat(32),
    STRIPE_EMULATOR: '1',
  };
  t.false(loadApiConfig(jwks).devSignIn, 'not when tokens come from a JWKS');
  t.is(loadApiConfig({ ...api, PUBLIC_URL: 'https://shop.example' }).publicUrl, 'https://shop.example');
});
