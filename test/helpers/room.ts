import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { asBuyer, type System } from './system';

/**
 * Moves the opening of `sku`'s room to now, by Postgres's clock, and returns that moment. A test
 * makes its room open far ahead, lets its pre-queue join for as long as the machine takes, then
 * opens it: whether a buyer joined before the opening no longer depends on how fast it joined.
 */
export async function openNow(databaseUrl: string, sku: string): Promise<Date> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ at: Date }>(
      `WITH room AS (UPDATE rooms SET opens_at = now() WHERE sku = $1 RETURNING opens_at)
       UPDATE products SET opens_at = (SELECT opens_at FROM room) WHERE sku = $1 RETURNING opens_at AS at`,
      [sku],
    );
    if (rows.length !== 1) throw new Error(`no product ${sku} to open`);
    return rows[0].at;
  } finally {
    await client.end();
  }
}

/**
 * A buyer's side of a waiting room, for the room tests: join, poll a ticket until it reads what
 * the test waits for, and buy with an admission token. `system` is read at each call (a file's
 * system starts in its `before` hook).
 */
export function roomBuyers(system: () => System, opts: { pollTimeoutMs?: number } = {}) {
  const pollTimeoutMs = opts.pollTimeoutMs ?? 30_000;
  const join = async (sku: string, buyer: string) => {
    return system().api('POST', `/v1/products/${sku}/queue`, undefined, await asBuyer(buyer));
  };
  /** Polls a ticket until `pred` holds (or fails with the last answer). */
  const pollUntil = async (
    ticket: string,
    pred: (b: any) => boolean,
    timeoutMs = pollTimeoutMs,
    everyMs = 50,
  ): Promise<any> => {
    const deadline = Date.now() + timeoutMs;
    let last: any;
    for (;;) {
      last = await system().api('GET', `/v1/queue/${ticket}`);
      if (last.status === 200 && pred(last.body)) return last.body;
      if (Date.now() > deadline) throw new Error(`ticket never matched: ${JSON.stringify(last.body)}`);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  };
  const buyWith = async (sku: string, buyer: string, token?: string, key = randomUUID()) => {
    const headers = {
      'idempotency-key': key,
      ...(await asBuyer(buyer)),
      ...(token ? { 'admission-token': token } : {}),
    };
    return system().api('POST', '/v1/purchases', { sku }, headers);
  };
  return {
    join,

    /** Polls a ticket until `pred` holds (or fails with the last answer). */
    pollUntil,

    /** POST /v1/purchases as `buyer`, with the admission token if given. */
    buyWith,

    /** `buyer` joins the line of `sku`, waits for their turn and buys with it (the purchase's answer). */
    admitAndBuy: async (sku: string, buyer: string) => {
      const { body } = await join(sku, buyer);
      const admitted = await pollUntil(body.ticket, (b) => b.state === 'admitted');
      return buyWith(sku, buyer, admitted.admissionToken);
    },
  };
}
