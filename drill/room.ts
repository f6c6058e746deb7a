// The waiting room as a buyer and as the admin see it, over HTTP only (the contract of
// `POST /v1/products/:sku/queue`, `GET /v1/queue/:ticket` and `GET /v1/products/:sku/waiting-room`).
import { sleep, str, type Answer, type DrillHttp } from './http';
import type { BuyerRecord } from './recorder';

export type RoomResult =
  | { state: 'admitted'; admissionToken: string }
  | { state: 'sold_out' | 'expired' | 'gave_up' | 'sold_out_for_now'; note?: string }
  /** The join was refused by the product's bot check (403 `bot-check-failed`): `note` is its reason. */
  | { state: 'bot_check'; note: string };

const MIN_POLL_MS = 1000;
const MAX_POLL_MS = 10_000;

/**
 * When to poll again after an answer: when the answer says (`nextPollSeconds`, by position: rarely far
 * from the head, often near it), drawn from 80 to 100 % of it so a crowd does not poll in step and
 * nobody polls later than told; from an API that does not say, after half the estimated wait (1 to
 * 10 s, jittered by a quarter either way), as the queue page did.
 */
export function pollDelayMs(body: Record<string, unknown>, rand: () => number): number {
  const told = Number(body.nextPollSeconds);
  if (Number.isFinite(told) && told > 0) return told * 1000 * (0.8 + rand() * 0.2);
  // In the pre-queue the wait is the time to the opening (position is null until then).
  const wait = Number(body.estimatedWaitSeconds);
  const base = Number.isFinite(wait) ? (wait * 1000) / 2 : MIN_POLL_MS;
  return Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, base)) * (0.75 + rand() * 0.5);
}

/** Joins the room and polls the ticket until admitted or turned away, as the queue page does (pollDelayMs). */
export async function waitInRoom(
  http: DrillHttp,
  poll: DrillHttp,
  o: {
    sku: string;
    authorization: string;
    buyer: BuyerRecord;
    now: () => number;
    deadline: () => number;
    /** How long a buyer told a unit may still reach it keeps waiting past `deadline` (the drill's settling). */
    lastChance: () => number;
    rand: () => number;
    onAdmitted: () => void;
    /** The bot check's solution for the join (header `Altcha`), when the product has one. */
    altcha?: string;
  },
): Promise<RoomResult> {
  const headers = { authorization: o.authorization };
  const joinHeaders = { ...headers, ...(o.altcha ? { altcha: o.altcha } : {}) };
  let ticket: string | undefined;
  while (!ticket) {
    if (o.now() > o.deadline()) return { state: 'gave_up', note: 'could not join the room' };
    // A join is safe to repeat (one ticket per buyer): a lost connection is tried again.
    const joined = await http
      .call('POST', `/v1/products/${encodeURIComponent(o.sku)}/queue`, '/v1/products/:sku/queue', {
        headers: joinHeaders,
        body: {},
      })
      .catch((): Answer => ({ status: 0, body: {} }));
    if ((joined.status === 201 || joined.status === 200) && typeof joined.body.ticket === 'string') {
      ticket = joined.body.ticket;
      const early = toResult(joined.body);
      if (early) return early;
    } else if (joined.status === 403 && str(joined.body.type).endsWith('bot-check-failed')) {
      return { state: 'bot_check', note: str(joined.body.reason) };
    } else if (joined.status === 0 || joined.status >= 500 || joined.status === 429) {
      await sleep(1000 + o.rand() * 1000);
    } else {
      return { state: 'gave_up', note: `join: ${joined.status} ${str(joined.body.type)}`.trim() };
    }
  }
  // The last poll falls just past the deadline, so a buyer still in line then ends as the room says
  // (sold out, say) and gives up only when the room still has it waiting.
  const pause = (ms: number) => sleep(Math.min(ms, Math.max(0, o.deadline() - o.now()) + 100));
  for (;;) {
    const r: Answer = await poll
      .call('GET', `/v1/queue/${encodeURIComponent(ticket)}`, '/v1/queue/:ticket', { headers })
      .catch((): Answer => ({ status: 0, body: {} }));
    if (r.status === 200) {
      // After the opening a pre-queue ticket comes back re-signed with its place: poll with that one.
      if (typeof r.body.ticket === 'string' && r.body.ticket) ticket = r.body.ticket;
      const done = toResult(r.body);
      if (done) {
        if (done.state === 'admitted') o.onAdmitted();
        return done;
      }
      if (o.now() > o.deadline()) {
        // Told that every unit is spoken for by buyers inside: one none may reach leaves as told; one
        // a returning unit may reach waits for it while the drill settles.
        const forNow = r.body.soldOutForNow as { withinReach?: unknown } | undefined;
        if (forNow && forNow.withinReach !== true) return { state: 'sold_out_for_now' };
        if (!forNow || o.now() > o.lastChance())
          return { state: 'gave_up', note: 'still queued at the end of the drill' };
        await sleep(Math.min(pollDelayMs(r.body, o.rand), 5_000));
        continue;
      }
      await pause(pollDelayMs(r.body, o.rand));
    } else if (r.status === 0 || r.status >= 500 || r.status === 429) {
      if (o.now() > o.deadline()) return { state: 'gave_up', note: `poll: ${r.status} at the end of the drill` };
      await pause(2000 + o.rand() * 1000);
    } else {
      return { state: 'gave_up', note: `poll: ${r.status} ${str(r.body.type)}`.trim() };
    }
  }
}

function toResult(body: Record<string, unknown>): RoomResult | undefined {
  if (body.state === 'admitted' && typeof body.admissionToken === 'string')
    return { state: 'admitted', admissionToken: body.admissionToken };
  if (body.state === 'sold_out' || body.state === 'expired') return { state: body.state };
  return undefined;
}

/** The room's own counts (the admin's view): `waiting` is the tickets in line (0 once sold out). */
export interface RoomView {
  state: string;
  soldOut: boolean;
  waiting: number;
  admitted: number;
  active: number;
}

/** The admin's view of the room, or undefined when it does not answer (the timeline leaves a gap). */
export async function roomView(http: DrillHttp, sku: string, adminToken: string): Promise<RoomView | undefined> {
  try {
    const r = await http.call(
      'GET',
      `/v1/products/${encodeURIComponent(sku)}/waiting-room`,
      '/v1/products/:sku/waiting-room',
      {
        headers: { authorization: `Bearer ${adminToken}` },
      },
    );
    if (r.status !== 200) return undefined;
    return {
      state: String(r.body.state),
      soldOut: r.body.soldOut === true,
      waiting: Number(r.body.waiting),
      admitted: Number(r.body.admitted),
      active: Number(r.body.active),
    };
  } catch {
    return undefined;
  }
}
