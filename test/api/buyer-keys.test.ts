import test from 'ava';
import type { ApiDeps } from '../../api/deps';
import { BuyerKeysUnavailable } from '../../config/buyer-tokens';
import { ADMIN_TOKEN, serveApp } from '../helpers/openapi';

// What the API answers when buyer tokens cannot be checked (the identity provider's key set out of
// reach): 503 with Retry-After, and a page's sign-in cookie kept, never 401 and a signed-out buyer.
// And the Bearer scheme is read whatever its case.

let app: Awaited<ReturnType<typeof serveApp>>;
test.before(async () => {
  app = await serveApp({
    buyers: { verify: () => Promise.reject(new BuyerKeysUnavailable('fetch failed')) },
    // Up, for the look the API takes at both after any 503 (api/outage.ts): the keys are what is out.
    db: { query: async () => ({ rows: [] }) } as unknown as ApiDeps['db'],
    temporal: {
      withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn(),
      workflowService: { getSystemInfo: async () => ({}) },
    } as unknown as ApiDeps['temporal'],
  });
});
test.after.always(async () => {
  await app?.close();
});

test('a buyer token that cannot be checked is 503 with Retry-After, not 401', async (t) => {
  const res = await fetch(`${app.baseUrl}/v1/purchases/pur_1`, { headers: { authorization: 'Bearer some-token' } });
  t.is(res.status, 503);
  t.truthy(res.headers.get('retry-after'));
  const body = (await res.json()) as { type: string; detail: string };
  t.is(body.type, 'unavailable');
  t.regex(body.detail, /sign-in key set is out of reach/);
});

test('a page whose sign-in cannot be checked keeps its cookie', async (t) => {
  const res = await fetch(`${app.baseUrl}/purchases/pur_1`, { headers: { cookie: 'buyer_token=some-token' } });
  t.is(res.status, 503);
  t.falsy(res.headers.get('set-cookie'), 'the sign-in cookie is not cleared');
});

test('the Bearer scheme is case-insensitive', async (t) => {
  for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
    // An admin route that refuses the body before reading anything: 400, not 401.
    const res = await fetch(`${app.baseUrl}/v1/products`, {
      method: 'POST',
      headers: { authorization: `${scheme} ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: '{}',
    });
    t.is(res.status, 400, scheme);
  }
});
