import test from 'ava';
import type Koa from 'koa';
import { requestGuard } from '../../../api/request-guard';
import { Problem } from '../../../api/problem';

// The request guard names the path parameter a bad segment is in, from the route template that fits
// the path as sent; a segment outside any template is the `path`.

const ROUTES = ['/v1/products/:sku', '/v1/products/:sku/queue', '/v1/queue/:ticket', '/v1/purchases/:id/cancel'];
const guard = requestGuard(ROUTES);

/** The guard's answer to `path`: 'next' when it lets the request through, else the fields it names. */
async function guarded(path: string, method = 'GET'): Promise<string | string[]> {
  const ctx = { method, path, get: () => '' } as unknown as Koa.Context;
  let passed = false;
  try {
    await guard(ctx, async () => {
      passed = true;
    });
  } catch (err) {
    if (!(err instanceof Problem)) throw err;
    return (err.extra?.errors as { field: string }[] | undefined)?.map((e) => e.field) ?? [err.type];
  }
  return passed ? 'next' : [];
}

test('clean paths pass, fitting a template or not', async (t) => {
  t.is(await guarded('/v1/products/sku-1/queue'), 'next');
  t.is(await guarded('/v1/queue/abc.def'), 'next');
  t.is(await guarded('/nowhere/at/all'), 'next');
});

test('a bad segment is named by the parameter of the template that fits the whole path', async (t) => {
  t.deepEqual(await guarded('/v1/products/a%00b'), ['sku']);
  t.deepEqual(await guarded('/v1/products/a%00b/queue'), ['sku']);
  t.deepEqual(await guarded('/v1/purchases/%E0%A4%A/cancel'), ['id']);
  t.deepEqual(await guarded(`/v1/products/${'s'.repeat(257)}`), ['sku']);
  // The ticket may be longer than other parameters, up to 1,024 characters.
  t.is(await guarded(`/v1/queue/${'t'.repeat(1024)}`), 'next');
  t.deepEqual(await guarded(`/v1/queue/${'t'.repeat(1025)}`), ['ticket']);
});

test('a bad segment of a path that fits no template, or of a literal part, is the path', async (t) => {
  t.deepEqual(await guarded('/v1/nothing/a%00b'), ['path']);
  t.deepEqual(await guarded('/v1/purchases/p-1/%00'), ['path']);
  t.deepEqual(await guarded('/v1/products/a%00b', 'BREW'), ['not-implemented']);
});
