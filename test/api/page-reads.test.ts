import http from 'node:http';
import test from 'ava';
import { startSystem, type System } from '../helpers/system';
import { countStatements } from './write-counter';

// The home page under a crowd: its catalogue is read once a period (CATALOGUE_CACHE_MS), not two
// statements per product per page, and one address is limited in how many pages it reads a second
// (RATE_LIMIT_PAGES_PER_IP_PER_SECOND), with a 429 page and Retry-After beyond it.

const PAGES_PER_SECOND = 5;

let sys: System;
test.before(async () => {
  sys = await startSystem({
    worker: false,
    catalogueCacheMs: 60_000,
    rateLimits: { perBuyerPerMinute: 0, perIpPerSecond: 0, pagesPerIpPerSecond: PAGES_PER_SECOND },
  });
});
test.after.always(async () => {
  await sys?.close();
});

/** GET `path` from the local address `from` (any of 127.0.0.0/8): the API sees a client of that address. */
function getFrom(
  from: string,
  path: string,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${sys.apiUrl}${path}`, { localAddress: from, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
  });
}

/** Statements that read the catalogue (products, their stock): the home page's reads. */
const CATALOGUE_READS = /\bFROM products\b/i;

test.serial('twenty home pages read the catalogue once, not twice per product per page', async (t) => {
  const skus = [];
  for (let i = 0; i < 5; i++) skus.push(await sys.createProduct({ name: `Listed ${i}` }));
  const reads = countStatements(sys.db, CATALOGUE_READS);
  // From twenty addresses, under the page limit of each: only the cache is being measured here.
  const pages = await Promise.all(Array.from({ length: 20 }, (_, i) => getFrom(`127.0.1.${i + 1}`, '/')));
  for (const page of pages) {
    t.is(page.status, 200, page.text.slice(0, 300));
    for (const sku of skus) t.true(page.text.includes(`href="/p/${sku}"`), `${sku} is listed`);
  }
  const more = [];
  for (let i = 0; i < 10; i++) more.push(await getFrom(`127.0.2.${i + 1}`, '/'));
  t.true(more.every((p) => p.status === 200));
  t.true(reads.count() <= 3, `${reads.count()} catalogue statements for 30 home pages`);

  // A product created through this API shows on the next page (the cache is renewed), read once more.
  const added = await sys.createProduct({ name: 'Listed later' });
  const before = reads.count();
  const after = await getFrom('127.0.3.1', '/');
  t.true(after.text.includes(`href="/p/${added}"`));
  t.true(reads.count() - before <= 3, `${reads.count() - before} catalogue statements for one renewed page`);
});

test.serial(
  'one address beyond the page limit gets a 429 page with Retry-After, another address still its page',
  async (t) => {
    // Fifty at once, half of them product pages (a page read too), against five a second.
    const paths = Array.from({ length: 10 * PAGES_PER_SECOND }, (_, i) => (i % 2 ? '/p/no-such-sku' : '/'));
    const started = Date.now();
    const hammer = await Promise.all(paths.map(async (path) => ({ path, ...(await getFrom('127.0.4.1', path)) })));
    const seconds = Math.ceil((Date.now() - started) / 1000);
    const limited = hammer.filter((p) => p.status === 429);
    // At most five pass in each second the burst touched (however slow the machine made it).
    const passable = PAGES_PER_SECOND * (seconds + 1);
    t.true(limited.length >= paths.length - passable, `${limited.length} of ${paths.length} limited in ${seconds}s`);
    t.true(limited.length > 0);
    t.deepEqual([...new Set(limited.map((p) => p.path))].sort(), ['/', '/p/no-such-sku']);
    for (const p of limited) {
      t.regex(p.headers['content-type'] ?? '', /^text\/html; charset=utf-8/);
      t.regex(p.headers['retry-after'] ?? '', /^\d+$/);
      t.regex(p.text, /data-kind="rate-limited"/);
      // It loads itself again when it may: a buyer on a queue page keeps their place without a click.
      t.true(p.text.includes(`<meta http-equiv="refresh" content="${p.headers['retry-after']}" />`), p.text);
    }
    const other = await getFrom('127.0.4.2', '/');
    t.is(other.status, 200, other.text.slice(0, 300));
    // The JSON API is not a page: its own limits apply, not this one.
    t.is((await getFrom('127.0.4.1', '/v1/products/no-such-sku')).status, 404);
  },
);
