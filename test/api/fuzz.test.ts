import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fc, testProp } from '@fast-check/ava';
import test from 'ava';
import Stripe from 'stripe';
import { purchaseIdFor } from '../../store/purchases';
import { uniqueSku } from '../helpers/db';
import { ADMIN_TOKEN, buyerToken, startSystem, SUPPORT_TOKEN, WEBHOOK_SECRET, type System } from '../helpers/system';
import {
  bodyFor,
  bytesFor,
  contentType,
  idempotencyKey,
  paramFor,
  stripeEvent,
  toJson,
  wrongValue,
} from './fuzz-arbitraries';
import { isPagePath } from '../../api/page-paths';
import { alterSignature } from '../helpers/tamper';
import { sendRaw, type RawRequest, type RawResponse } from './raw-http';
import { countWrites, type WriteCounter } from './write-counter';

// Every route of docs/openapi.json, fuzzed: path parameters, headers and bodies generated from
// the document (valid ones, boundaries, and mutations: wrong types, extra fields, huge numbers,
// deep nesting, control characters, lone surrogates, broken encodings), sent byte for byte.
// For every answer: no 5xx (501 `not-implemented` for a method nobody implements is the one
// exception), every 4xx a problem+json whose `type` is one of the contract's (an HTML page on the
// buyer's pages), and nothing written
// (no row in Postgres, no workflow started or signalled) for a refused request. No worker runs:
// the purchase fuzz aims at a sold-out product and unknown ones, so no saga needs one.

const RUNS = Number(process.env.FUZZ_RUNS ?? 200);
const doc = JSON.parse(fs.readFileSync(path.join(__dirname, '../../docs/openapi.json'), 'utf8'));
const PROBLEM_TYPES: string[] = doc.components.schemas.ProblemType.enum;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const OTHER_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'QUERY', 'FOO'];
const BUYER = 'fuzz-buyer';
/** Products this file creates all start with it: no purchase fuzz can name one by chance. */
const CREATED_PREFIX = `fz${randomBytes(3).toString('hex')}`;

let sys: System;
let writes: WriteCounter;
const seeds = { counted: '', soldOut: '', seats: '', purchase: '', refund: '' };
const tokens = { buyer: '', other: '' };
const stripe = new Stripe('sk_test_fuzz');

test.before(async () => {
  sys = await startSystem({ worker: false, purchaseTimeoutMs: 3_000 });
  writes = countWrites(sys.db, sys.temporal);
  seeds.counted = await sys.createProduct({ sku: uniqueSku('fuzz-counted'), stock: 10, buckets: 3 });
  seeds.soldOut = await sys.createProduct({ sku: uniqueSku('fuzz-soldout'), stock: 0, maxPerBuyer: 2 });
  seeds.seats = await sys.createProduct({ sku: uniqueSku('fuzz-seats'), stock: 2, units: ['A1', 'A2'] });
  // A purchase that is over (expired): readable and cancellable by its buyer, not refundable. The
  // refund fuzz has one of its own: the webhook fuzz's signed events may make the first one paid,
  // and a refund support may then ask for waits its 10 s for a saga no worker runs.
  for (const seed of ['purchase', 'refund'] as const) {
    const key = randomUUID();
    seeds[seed] = purchaseIdFor(key, BUYER);
    await sys.db.query(
      `INSERT INTO purchases (purchase_id, idempotency_key, request, sku, buyer_id, quantity, status)
       VALUES ($1, $2, $3, $4, $5, 1, 'expired')`,
      [seeds[seed], key, JSON.stringify({ sku: seeds.soldOut, buyerId: BUYER, quantity: 1 }), seeds.soldOut, BUYER],
    );
  }
  if (writes.count() === 0) throw new Error('the write counter saw none of the seeds being written');
  tokens.buyer = await buyerToken(BUYER);
  tokens.other = await buyerToken('someone-else');
});
test.after.always(async () => {
  await sys?.close();
});

const authorization = () =>
  fc.oneof(
    fc.constantFrom(
      `Bearer ${ADMIN_TOKEN}`,
      `Bearer ${SUPPORT_TOKEN}`,
      `Bearer ${tokens.buyer}`,
      `Bearer ${tokens.other}`,
      'Bearer ',
      'Bearer garbage',
      `bearer ${ADMIN_TOKEN}`,
      `Basic ${Buffer.from('a:b').toString('base64')}`,
      `Bearer ${alterSignature(tokens.buyer)}`,
      'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.',
      `Bearer ${'a'.repeat(8000)}`,
    ),
    fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 60 }),
  );

/** `arb` one time in `n`, else null. */
const rarely = <T>(arb: fc.Arbitrary<T>, n: number): fc.Arbitrary<T | null> =>
  fc.oneof({ weight: n - 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb });

/** Headers for one request; `extra` adds the route's own (Idempotency-Key, Stripe-Signature). */
function headers(
  extra: fc.Arbitrary<[string, string][]> = fc.constant([]),
  preferred?: string,
): fc.Arbitrary<[string, string][]> {
  // The route's own credential half of the time, so the fuzz gets past the door as often as not.
  const auth = preferred
    ? fc.oneof(
        { weight: 3, arbitrary: fc.constant(preferred) },
        { weight: 1, arbitrary: authorization() },
        { weight: 1, arbitrary: fc.constant(null) },
      )
    : fc.oneof({ weight: 1, arbitrary: fc.constant(null) }, { weight: 3, arbitrary: authorization() });
  return fc
    .tuple(
      auth,
      contentType,
      rarely(fc.constantFrom('respond-async', 'garbage', 'respond-async, wait=1'), 3),
      rarely(fc.constantFrom('gzip', 'deflate', 'br', 'bogus', 'identity'), 15),
      rarely(
        fc.constantFrom<[string, string]>(['X-Junk', '\u0001'], ['Bad Name', 'x'], ['X-Long', 'v'.repeat(20_000)]),
        25,
      ),
      extra,
    )
    .map(([auth, type, prefer, encoding, junk, own]) => {
      const h: [string, string][] = [];
      if (auth !== null) h.push(['Authorization', auth]);
      if (type !== undefined) h.push(['Content-Type', type]);
      if (prefer !== null) h.push(['Prefer', prefer]);
      if (encoding !== null) h.push(['Content-Encoding', encoding]);
      if (junk !== null) h.push(junk);
      return [...h, ...own];
    });
}

/** The credential each operation wants. */
function credentialOf(operationId: string): string | undefined {
  if (operationId === 'createProduct' || operationId === 'restockProduct') return `Bearer ${ADMIN_TOKEN}`;
  if (operationId === 'supportRefund' || operationId === 'findPurchases') return `Bearer ${SUPPORT_TOKEN}`;
  if (['createPurchase', 'getPurchase', 'cancelPurchase'].includes(operationId)) return `Bearer ${tokens.buyer}`;
  return undefined;
}

/** Good values of each path parameter, per operation (the restock fuzz must not restock the sold-out product). */
function goodParams(operationId: string, name: string): string[] {
  if (name === 'sku') return operationId === 'restockProduct' ? [seeds.counted] : Object.values(seeds).slice(0, 3);
  return [operationId === 'supportRefund' ? seeds.refund : seeds.purchase];
}

/**
 * What the fuzz does to the body of one operation beyond the schema, on most cases (`coin`), so
 * that a fair share of requests is valid and goes past validation: the cross-field rules, the
 * purchase aimed at the sold-out product (or none), the buyer of the token.
 */
function adjustBody(operationId: string, body: unknown, coin: number): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return body;
  const b = { ...(body as Record<string, unknown>) };
  if (operationId === 'createProduct') {
    if (typeof b.sku === 'string') b.sku = `${CREATED_PREFIX}${b.sku}`.slice(0, 64);
    if (coin % 4 !== 0) delete b.waitingRoom;
    if (Array.isArray(b.units) && coin % 2 === 0) {
      b.stock = b.units.length;
      delete b.oversellAllowance;
    }
    if (typeof b.priceCents === 'number' && coin % 3 !== 0) b.priceCents = Math.min(b.priceCents, 99_999);
  }
  if (operationId === 'createPurchase') {
    if (coin % 3 !== 0) b.sku = coin % 3 === 1 ? seeds.soldOut : `nx-${coin}`;
    if (coin % 2 === 0) b.buyerId = BUYER;
    else if (coin % 5 !== 0) delete b.buyerId;
  }
  return b;
}

interface Operation {
  method: string;
  template: string;
  operationId: string;
  params: string[];
  body?: Record<string, unknown>;
}

const operations: Operation[] = Object.entries<Record<string, any>>(doc.paths).flatMap(([template, item]) =>
  METHODS.filter((m) => item[m]).map((m) => ({
    method: m.toUpperCase(),
    template,
    operationId: item[m].operationId as string,
    params: [...template.matchAll(/\{([^}]+)\}/g)].map((x) => x[1]),
    body: item[m].requestBody?.content['application/json']?.schema,
  })),
);

/** One request of an operation: its method (mostly), filled-in path, headers, body bytes. */
function requestFor(op: Operation): fc.Arbitrary<RawRequest> {
  const params = fc.tuple(...op.params.map((p) => paramFor(goodParams(op.operationId, p))));
  const method = fc.oneof(
    { weight: 9, arbitrary: fc.constant(op.method) },
    { weight: 1, arbitrary: fc.constantFrom(...OTHER_METHODS) },
  );
  const isWebhook = op.operationId === 'stripeWebhook';
  const schemaBody = op.body ? bodyFor(op.body, doc) : fc.constant(undefined);
  const body = isWebhook
    ? fc.oneof(
        { weight: 4, arbitrary: stripeEvent },
        { weight: 1, arbitrary: bodyFor(doc.components.schemas.StripeEvent, doc) },
      )
    : schemaBody;
  // A route without a body mostly gets none, sometimes a stray one.
  const bytes = op.body || isWebhook ? bytesFor(body) : rarely(bytesFor(wrongValue), 4).map((b) => b ?? undefined);
  const own: fc.Arbitrary<[string, string][]> =
    op.operationId === 'createPurchase'
      ? fc
          .oneof({ weight: 1, arbitrary: fc.constant(null) }, { weight: 6, arbitrary: idempotencyKey })
          .map((k) => (k === null ? [] : [['Idempotency-Key', k]]))
      : fc.constant([]);
  return fc
    .tuple(method, params, headers(own, credentialOf(op.operationId)), bytes, fc.nat(), fc.nat({ max: 5 }))
    .map(([m, values, h, bytes, coin, sign]) => {
      let p = op.template;
      op.params.forEach((name, i) => (p = p.replace(`{${name}}`, values[i])));
      let b = bytes;
      if (op.body && bytes && !isWebhook) {
        try {
          b = Buffer.from(toJson(adjustBody(op.operationId, JSON.parse(bytes.toString('utf8')), coin)));
        } catch {
          // Not JSON on purpose: sent as it is.
        }
      }
      if (isWebhook && b) {
        b = Buffer.from(b.toString('utf8').replace('"PURCHASE"', JSON.stringify(seeds.purchase)));
        // Mostly signed for the exact bytes, so the fuzz gets past the signature to the event's contents.
        if (sign > 0) {
          const header = stripe.webhooks.generateTestHeaderString({
            payload: b.toString('utf8'),
            secret: WEBHOOK_SECRET,
          });
          h.push(['Stripe-Signature', sign === 1 ? header.replace(/t=\d+/, 't=1') : header]);
        }
      }
      return { method: m, path: p, headers: h, body: m === 'GET' || m === 'HEAD' ? undefined : b };
    });
}

/** The properties every answer must have; `written` is how many writes the request made. */
function check(t: { true(v: boolean, m?: string): void }, req: RawRequest, res: RawResponse, written: number) {
  const sent = `${JSON.stringify(req.headers).slice(0, 300)} ${req.body?.toString('utf8').slice(0, 400) ?? ''}`;
  const what = `${req.method} ${req.path.slice(0, 120)} ${sent} -> ${res.status} ${res.text.slice(0, 300)}`;
  const notImplemented = res.status === 501 && (res.json as { type?: string })?.type === 'not-implemented';
  t.true(res.status < 500 || notImplemented, `no 5xx: ${what}`);
  if (res.status >= 400) {
    const p = res.json as { type?: string; status?: number; title?: string; detail?: string } | undefined;
    // The buyer's HTML pages answer what they refuse as a page in words (api/page-errors.ts).
    const page = isPagePath(req.path.split('?')[0]) && /^text\/html/.test(res.headers['content-type'] ?? '');
    if (page) t.true(req.method === 'HEAD' || /^<!doctype html>/.test(res.text), `an HTML page: ${what}`);
    else if (req.method !== 'HEAD') {
      t.true(/^application\/problem\+json/.test(res.headers['content-type'] ?? ''), `problem+json: ${what}`);
      t.true(PROBLEM_TYPES.includes(p?.type ?? ''), `a contract type: ${what}`);
      t.true(
        p?.status === res.status && typeof p?.title === 'string' && typeof p?.detail === 'string',
        `problem shape: ${what}`,
      );
    }
    // CONNECT names no path of ours: its Allow is empty (no method tunnels), which RFC 9110 allows.
    if (res.status === 405) t.true(res.headers.allow !== undefined, `405 has Allow: ${what}`);
    t.true(
      written === 0,
      `nothing written for a refusal (${written}: ${writes.last().slice(-3).join(' | ')}): ${what}`,
    );
  }
}

/** Per fuzzed route: how many answers of each status and type, and how long the route took. */
const figures = new Map<string, { cases: number; ms: number; answers: Record<string, number> }>();

async function exchange(route: string, req: RawRequest): Promise<{ res: RawResponse; written: number }> {
  const before = writes.count();
  const started = Date.now();
  const res = await sendRaw(sys.apiUrl, req);
  const f = figures.get(route) ?? { cases: 0, ms: 0, answers: {} };
  const p = res.json as { type?: string; errors?: { field: string }[] } | undefined;
  const answer = [res.status, p?.type, p?.errors?.[0]?.field].filter((x) => x !== undefined).join(' ');
  f.cases++;
  f.ms += Date.now() - started;
  f.answers[answer] = (f.answers[answer] ?? 0) + 1;
  figures.set(route, f);
  return { res, written: writes.count() - before };
}

for (const op of operations) {
  testProp.serial(
    `fuzz ${op.method} ${op.template}: no 5xx, every 4xx a problem, nothing written when refused`,
    // Built when the first case runs: the seeds and tokens exist only after `test.before`.
    [fc.constant(null).chain(() => requestFor(op))],
    async (t, req) => {
      const { res, written } = await exchange(`${op.method} ${op.template}`, req);
      check(t, req, res, written);
    },
    { numRuns: RUNS, endOnFailure: true },
  );
}

const unknownPath = fc.oneof(
  fc
    .array(fc.string({ minLength: 1, maxLength: 12 }).map(encodeURIComponent), { minLength: 1, maxLength: 6 })
    .map((s) => `/${s.join('/')}`),
  fc.constantFrom(
    '/',
    '//',
    '/v1',
    '/v1/',
    '/v1/products/a/b/c',
    '/%00',
    '/%ED%A0%80',
    '/v2/products',
    '*',
    '/openapi.json/x',
  ),
  paramFor(['v1']).map((p) => `/v1/products/x/${p}`),
);

testProp.serial(
  'fuzz unknown paths and methods: 404 not-found, 405 with Allow, 501 not-implemented, all problems',
  [
    fc.constantFrom(...OTHER_METHODS, 'PROPFIND', 'M-SEARCH', 'CONNECT', 'get'),
    unknownPath,
    fc.constant(null).chain(() => headers()),
  ],
  async (t, method, p, h) => {
    const req = { method, path: p, headers: h, body: method === 'POST' ? Buffer.from('{}') : undefined };
    const { res, written } = await exchange('unknown paths and methods', req);
    check(t, req, res, written);
  },
  { numRuns: RUNS, endOnFailure: true },
);

test.serial('fuzz figures: every route had its cases', (t) => {
  for (const [route, f] of figures) {
    const answers = Object.entries(f.answers)
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ×${n}`)
      .join(', ');
    t.log(`${route}: ${f.cases} cases in ${f.ms} ms: ${answers}`);
    t.true(f.cases >= RUNS, `${route}: ${f.cases} cases`);
  }
  t.is(figures.size, operations.length + 1);
});
