import { randomUUID } from 'node:crypto';
import { asBuyer, type System } from './system';

/**
 * A buyer's side of a waiting room, for the room tests: join, poll a ticket until it reads what
 * the test waits for, and buy with an admission token. `system` is read at each call (a file's
 * system starts in its `before` hook).
 */
export function roomBuyers(system: () => System, opts: { pollTimeoutMs?: number } = {}) {
  const pollTimeoutMs = opts.pollTimeoutMs ?? 30_000;
  return {
    join: async (sku: string, buyer: string) => {
      return system().api('POST', `/v1/products/${sku}/queue`, undefined, await asBuyer(buyer));
    },

    /** Polls a ticket until `pred` holds (or fails with the last answer). */
    pollUntil: async (
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
    },

    /** POST /v1/purchases as `buyer`, with the admission token if given. */
    buyWith: async (sku: string, buyer: string, token?: string, key = randomUUID()) => {
      const headers = {
        'idempotency-key': key,
        ...(await asBuyer(buyer)),
        ...(token ? { 'admission-token': token } : {}),
      };
      return system().api('POST', '/v1/purchases', { sku }, headers);
    },
  };
}
