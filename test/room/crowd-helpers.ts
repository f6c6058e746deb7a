import { randomUUID } from 'node:crypto';
import { ADMIN_TOKEN, buyerToken, sessionOf, type System } from '../helpers/system';

// A waiting-room crowd made cheap: a buyer is a token, a ticket and a few HTTP calls; only the
// buyers who are admitted run a saga.

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `fn` over `items`, `inFlight` at a time; results in item order. */
export async function mapLimit<T, R>(
  items: T[],
  inFlight: number,
  fn: (item: T, i: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i], i);
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, items.length) }, lane));
  return out;
}

export class Crowd {
  private readonly tokens = new Map<string, string>();

  constructor(
    readonly sys: System,
    readonly sku: string,
  ) {}

  async auth(buyer: string): Promise<Record<string, string>> {
    let token = this.tokens.get(buyer);
    if (!token) this.tokens.set(buyer, (token = await buyerToken(buyer)));
    return { authorization: `Bearer ${token}` };
  }

  /** Joins each buyer (in order, `inFlight` at a time); their tickets, in the same order. */
  async join(buyers: string[], inFlight = 32, base = ''): Promise<{ buyer: string; ticket: string; state: string }[]> {
    return mapLimit(buyers, inFlight, async (buyer) => {
      const res = await this.sys.api(
        'POST',
        `${base}/v1/products/${this.sku}/queue`,
        undefined,
        await this.auth(buyer),
      );
      if (res.status !== 201 && res.status !== 200)
        throw new Error(`join ${buyer}: ${res.status} ${JSON.stringify(res.body)}`);
      return { buyer, ticket: res.body.ticket, state: res.body.state };
    });
  }

  async poll(ticket: string, base = ''): Promise<any> {
    const res = await this.sys.api('GET', `${base}/v1/queue/${ticket}`);
    if (res.status !== 200) throw new Error(`poll: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  /** Polls until the view satisfies `pred` (a process's cache may be a few hundred ms behind the record). */
  async pollUntil(ticket: string, pred: (view: any) => boolean, timeoutMs = 10_000, base = ''): Promise<any> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const view = await this.poll(ticket, base);
      if (pred(view)) return view;
      if (Date.now() > until) throw new Error(`ticket never matched: ${JSON.stringify(view)}`);
      await sleep(50);
    }
  }

  /** POST /v1/purchases with the admission token; the answer. */
  buy(buyer: string, admissionToken: string, key = randomUUID()) {
    return this.auth(buyer).then((auth) =>
      this.sys.api(
        'POST',
        '/v1/purchases',
        { sku: this.sku },
        { ...auth, 'idempotency-key': key, 'admission-token': admissionToken },
      ),
    );
  }

  /** Pays a purchase's Checkout Session (the emulator), as the buyer would. */
  async pay(purchaseId: string): Promise<void> {
    const paid = await this.sys.pay(await sessionOf(this.sys.db, purchaseId), 'succeeded');
    if (paid.status !== 200) throw new Error(`pay ${purchaseId}: ${JSON.stringify(paid.body)}`);
  }

  /** The operator's view of the room. */
  async room(base = ''): Promise<any> {
    const res = await this.sys.api('GET', `${base}/v1/products/${this.sku}/waiting-room`, undefined, {
      authorization: `Bearer ${ADMIN_TOKEN}`,
    });
    return res.body;
  }

  /** The room's tickets from the record, by place. */
  async tickets(): Promise<{ buyer_id: string; place: number; joined_at: Date; admitted_at: Date | null }[]> {
    const { rows } = await this.sys.db.query(
      `SELECT buyer_id, place::int AS place, joined_at, admitted_at FROM room_tickets WHERE sku = $1 ORDER BY place`,
      [this.sku],
    );
    return rows;
  }
}
