// A small steady load for the outage test: a few clients, each going round the routes (a product,
// a purchase by a new buyer, readiness, the process's own readiness, liveness, a signed webhook),
// timing every answer.
import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { signBuyerToken } from '../../config/buyer-tokens';

export const KINDS = [
  'product',
  'purchase',
  'readyz',
  'readyz-process',
  'healthz',
  'webhook',
  'webhook-signal',
] as const;
export type Kind = (typeof KINDS)[number];

export interface Answer {
  kind: Kind;
  /** When the request was sent and when its answer had fully arrived (ms since the epoch). */
  at: number;
  end: number;
  ms: number;
  status: number;
  retryAfter: string | null;
  contentType: string;
  type?: string;
  /** Set when no answer came (network error, or the client's own 10 s timeout). */
  error?: string;
}

export interface LoadOptions {
  apiUrl: string;
  sku: string;
  clients: number;
  pauseMs: number;
  buyerTokenSecret: string;
  webhookSecret: string;
  /** A purchase awaiting payment whose saga is told of declines: the webhook that needs Temporal. */
  signalTarget: { purchaseId: string; paymentIntentId: string; amountCents: number; currency: string };
}

const stripe = new Stripe('sk_test_outage_load');

/** A signed Stripe event: for no purchase of ours (Postgres only), or a decline of `target` (a signal). */
function signedEvent(o: LoadOptions, kind: 'webhook' | 'webhook-signal'): { body: string; signature: string } {
  const id = `evt_load_${randomUUID().replace(/-/g, '')}`;
  const object =
    kind === 'webhook'
      ? {
          id: `cs_load_${randomUUID().slice(0, 8)}`,
          object: 'checkout.session',
          metadata: { purchase_id: `pur_nobody_${randomUUID().slice(0, 8)}` },
          payment_status: 'unpaid',
        }
      : {
          // Always the same payment: a second one would be refused as not this purchase's (no signal).
          id: o.signalTarget.paymentIntentId,
          object: 'payment_intent',
          metadata: { purchase_id: o.signalTarget.purchaseId },
          // The order's own amount and currency: an event without them is refused before any signal.
          amount: o.signalTarget.amountCents,
          currency: o.signalTarget.currency,
        };
  const event = {
    id,
    object: 'event',
    type: kind === 'webhook' ? 'checkout.session.expired' : 'payment_intent.payment_failed',
    api_version: '2024-06-20',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: { object },
  };
  const body = JSON.stringify(event);
  return { body, signature: stripe.webhooks.generateTestHeaderString({ payload: body, secret: o.webhookSecret }) };
}

async function request(o: LoadOptions, kind: Kind, client: number, n: number): Promise<Answer> {
  let method = 'GET';
  let path = '';
  let body: string | undefined;
  const headers: Record<string, string> = {};
  switch (kind) {
    case 'product':
      path = `/v1/products/${o.sku}`;
      break;
    case 'purchase': {
      const buyer = `load-${client}-${n}-${randomUUID().slice(0, 6)}`;
      method = 'POST';
      path = '/v1/purchases';
      body = JSON.stringify({ sku: o.sku });
      headers['content-type'] = 'application/json';
      headers['idempotency-key'] = randomUUID();
      headers.authorization = `Bearer ${await signBuyerToken(o.buyerTokenSecret, buyer)}`;
      break;
    }
    case 'readyz':
    case 'healthz':
      path = `/${kind}`;
      break;
    case 'readyz-process':
      path = '/readyz?scope=process';
      break;
    case 'webhook':
    case 'webhook-signal': {
      const e = signedEvent(o, kind);
      method = 'POST';
      path = '/v1/webhooks/stripe';
      body = e.body;
      headers['content-type'] = 'application/json';
      headers['stripe-signature'] = e.signature;
      break;
    }
  }
  const at = Date.now();
  try {
    const res = await fetch(`${o.apiUrl}${path}`, { method, headers, body, signal: AbortSignal.timeout(10_000) });
    const text = await res.text();
    const end = Date.now();
    let type: string | undefined;
    try {
      type = (JSON.parse(text) as { type?: string }).type;
    } catch {
      // not JSON
    }
    return {
      kind,
      at,
      end,
      ms: end - at,
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      contentType: res.headers.get('content-type') ?? '',
      type,
    };
  } catch (err) {
    const end = Date.now();
    return { kind, at, end, ms: end - at, status: 0, retryAfter: null, contentType: '', error: (err as Error).message };
  }
}

export interface Load {
  answers: Answer[];
  /** Sends `n` requests of one kind at once, beside the loops; resolves with their answers (also in `answers`). */
  burst(kind: Kind, n: number): Promise<Answer[]>;
  /** Stops the loops and waits for the answers in flight. */
  stop(): Promise<void>;
}

/** Starts `clients` loops, each going round the routes from a different one. */
export function startLoad(o: LoadOptions): Load {
  const answers: Answer[] = [];
  let running = true;
  const loops = Array.from({ length: o.clients }, async (_, client) => {
    for (let n = 0; running; n++) {
      answers.push(await request(o, KINDS[(client + n) % KINDS.length], client, n));
      await new Promise((r) => setTimeout(r, o.pauseMs));
    }
  });
  let bursts = 0;
  return {
    answers,
    async burst(kind, n) {
      const b = ++bursts;
      const sent = await Promise.all(Array.from({ length: n }, (_, i) => request(o, kind, 1000 * b + i, 0)));
      answers.push(...sent);
      return sent;
    },
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** A success: what each route answers when all is well. */
export function isSuccess(a: Answer): boolean {
  return a.status >= 200 && a.status < 300;
}

/** An outage answer: 503 with Retry-After; a problem+json `unavailable`, except /readyz's own body. */
export function isOutageAnswer(a: Answer): boolean {
  if (a.status !== 503 || !a.retryAfter) return a.kind === 'readyz' && a.status === 503;
  return a.type === 'unavailable' && a.contentType.startsWith('application/problem+json');
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/**
 * When the service was back after an outage that ended at `backAt`: the last answer that was not a
 * success (sent after `backAt`) has ended, and every route that failed during the outage (sent from
 * `from`) has succeeded since. `ms` counts from `backAt`; `stableMs` is how long it has been all
 * successes since the last failure. Undefined while some route has not succeeded again.
 */
export function recovery(
  answers: Answer[],
  from: number,
  backAt: number,
): { ms: number; stableMs: number } | undefined {
  const failed = new Set(answers.filter((a) => a.at >= from && a.at < backAt && !isSuccess(a)).map((a) => a.kind));
  const after = answers.filter((a) => a.at >= backAt);
  const lastFailure = Math.max(backAt, ...after.filter((a) => !isSuccess(a)).map((a) => a.end));
  let back = lastFailure;
  for (const kind of failed) {
    const first = after.find((a) => a.kind === kind && a.at >= lastFailure && isSuccess(a));
    if (!first) return undefined;
    back = Math.max(back, first.end);
  }
  return { ms: back - backAt, stableMs: Date.now() - lastFailure };
}
