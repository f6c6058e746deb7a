// One simulated buyer, start to end: arrives (before the opening, for a share of a room's crowd),
// waits in the room if there is one, presses Buy (again, when told units may come back), and with a
// checkout does what its behaviour says: pays at once, after a decline, by bank debit that succeeds
// or fails, after the hold lapsed, or never. Then it watches its purchase until it settles, as the
// return page does. Every choice is drawn up front from the buyer's own seeded random, so a seed
// replays the same crowd (the timing of the answers still varies from run to run).
import { randomUUID } from 'node:crypto';
import { seededRandom, sessionIdOfCheckoutUrl } from '@flash-sale/stripe-emulator';
import { HOLDING_STATUSES } from '../vocabulary';
import { followToCheckout, sleep, str, type DrillHttp } from './http';
import { BEHAVIOURS, type Behaviour, type DrillOptions } from './options';
import type { BuyerRecord, Paid, Recorder } from './recorder';
import { waitInRoom } from './room';
import { STOPPED_BY_BOT_CHECK, type SaleRules } from './rules';

/** What one buyer will do, drawn before the drill starts. */
export interface BuyerPlan {
  behaviour: Behaviour;
  early: boolean;
  /** ms since the opening (negative: in the pre-queue). */
  arriveAt: number;
  thinkMs: number;
  declines: number;
  lateByMs: number;
  debitMs: number;
  /** Jitter for retries and polls, after the plan's own draws. */
  rand: () => number;
}

/** Sold-out answers that say units may come back before the buyer gives up. */
const MAX_SOLD_OUT_TRIES = 3;
/** How long a buyer let in by the room keeps trying to buy, even past the end of the sale. */
const ADMITTED_TURN_MS = 10_000;
const PAID_FINAL = new Set(['confirmed', 'late_confirmed', 'refunded', 'needs_attention', 'failed']);

export function planBuyers(opts: DrillOptions): BuyerPlan[] {
  return Array.from({ length: opts.buyers }, (_, n) => {
    const rand = seededRandom((opts.seed + Math.imul(n + 1, 0x9e3779b1)) >>> 0);
    const roll = rand();
    let acc = 0;
    const behaviour = BEHAVIOURS.find((b) => (acc += opts.mix[b]) > roll) ?? 'abandon';
    const early = rand() < opts.early;
    // A crowd at a drop arrives at once and thins out: exponential, a quarter of the window on average.
    const u = rand();
    const arriveAt = early
      ? -u * opts.opensInSeconds * 1000
      : Math.min(opts.arrivalSeconds * 1000, (-Math.log(1 - u) * opts.arrivalSeconds * 1000) / 4);
    const holdMs = opts.holdSeconds * 1000;
    return {
      behaviour,
      early,
      arriveAt,
      thinkMs: 200 + rand() * Math.min(3000, holdMs / 4),
      declines: 1 + Math.floor(rand() * 2),
      lateByMs: 1000 + rand() * 2000,
      debitMs: 500 + rand() * Math.min(3000, holdMs / 4),
      rand,
    };
  });
}

export interface SaleContext {
  /** Buy and join: the crowd's sockets (`--concurrency`). */
  api: DrillHttp;
  /** Polls of tickets and purchases, on `--concurrency` sockets of their own: a buyer watching its purchase does not queue behind the crowd. */
  poll: DrillHttp;
  emulator: DrillHttp;
  recorder: Recorder;
  sku: string;
  room: boolean;
  /** The bot check and the address limit, when the crowd has bots (drill/rules.ts). */
  rules: SaleRules;
  /** ms since the opening after which nobody tries to get a unit any more. */
  saleDeadline: number;
  /** ms since the opening after which nobody waits for a purchase to settle (set once everyone acted). */
  settleDeadline: () => number;
}

export async function runBuyer(ctx: SaleContext, b: BuyerRecord, token: string, plan: BuyerPlan): Promise<void> {
  const { recorder } = ctx;
  const jitter = (lo: number, hi: number) => lo + plan.rand() * (hi - lo);
  await sleep(plan.arriveAt - recorder.now());
  b.arrivedAt = recorder.now();
  const authorization = `Bearer ${token}`;
  let admission: string | undefined;
  if (ctx.room) {
    b.phase = 'queued';
    // With a room, the bot check is at the join.
    const altcha = await ctx.rules.payloadFor(b, plan.rand);
    const r = await waitInRoom(ctx.api, ctx.poll, {
      altcha,
      sku: ctx.sku,
      authorization,
      buyer: b,
      now: () => recorder.now(),
      deadline: () => ctx.saleDeadline,
      lastChance: () => ctx.settleDeadline(),
      rand: plan.rand,
      onAdmitted: () => (b.admittedAt = recorder.now()),
    });
    b.leftLineAt = recorder.now();
    if (r.state === 'bot_check') return finish(b, STOPPED_BY_BOT_CHECK + r.note);
    if (r.state !== 'admitted') return finish(b, r.state === 'gave_up' ? 'gave_up' : `room_${r.state}`, r.note);
    ctx.rules.accepted(b, altcha);
    admission = r.admissionToken;
    b.phase = 'admitted';
  }

  // Buy: a sold-out that may change is tried again (a new press of Buy, a new key); a 503 with the same key.
  let key = randomUUID();
  // Without a room, the bot check is at the purchase: a solution per key (a retry of one key sends it again).
  let altcha = ctx.room ? undefined : await ctx.rules.payloadFor(b, plan.rand);
  let soldOutTries = 0;
  let checkout: { holdExpiresAt?: unknown; checkoutUrl?: unknown; status?: unknown } | undefined;
  while (!checkout) {
    // A buyer let in just before the end still has its turn to use.
    const until = Math.max(ctx.saleDeadline, (b.admittedAt ?? 0) + ADMITTED_TURN_MS);
    if (recorder.now() > until) return finish(b, 'gave_up', b.note ?? 'no unit before the end of the sale');
    b.phase = 'buying';
    b.posts++;
    let a;
    try {
      a = await ctx.api.call('POST', '/v1/purchases', '/v1/purchases', {
        headers: {
          authorization,
          'idempotency-key': key,
          ...(admission ? { 'admission-token': admission } : {}),
          ...(altcha ? { altcha } : {}),
        },
        body: { sku: ctx.sku },
      });
    } catch (err) {
      b.note = `network: ${(err as Error).message}`;
      await sleep(jitter(500, 1500));
      continue; // the same key joins the purchase, if there is one
    }
    const type = str(a.body.type);
    if ((a.status === 201 || a.status === 200 || a.status === 202) && typeof a.body.purchaseId === 'string') {
      ctx.rules.accepted(b, altcha);
      b.purchaseId = a.body.purchaseId;
      // 202: the unit is this buyer's, the session waits for its turn in the Stripe budget.
      checkout =
        a.status === 202
          ? ((await followToCheckout(
              () =>
                ctx.api.call('GET', `/v1/purchases/${b.purchaseId}`, '/v1/purchases/:id', {
                  headers: { authorization },
                }),
              a.body,
              { jitterMs: () => jitter(0, 300), givenUp: () => ctx.recorder.now() > ctx.saleDeadline },
            )) ?? {})
          : a.body;
      // Its saga found nothing left when its turn came (the gates of several APIs let in a little more
      // than there was): sold out for now, as a 409 would have said; the buyer tries again.
      if (a.status === 202 && typeof checkout.checkoutUrl !== 'string' && checkout.status === 'failed') {
        checkout = undefined;
        b.purchaseId = undefined;
        if (++soldOutTries >= MAX_SOLD_OUT_TRIES) return finish(b, 'sold_out_gave_up');
        await sleep(jitter(500, 1500));
        key = randomUUID();
        if (!ctx.room) altcha = await ctx.rules.payloadFor(b, plan.rand);
      }
    } else if (a.status === 409 && type.endsWith('sold-out')) {
      if (a.body.final === true) return finish(b, 'sold_out');
      if (++soldOutTries >= MAX_SOLD_OUT_TRIES) return finish(b, 'sold_out_gave_up');
      b.phase = 'queued';
      const retryAt = typeof a.body.retryAt === 'string' ? Date.parse(a.body.retryAt) - recorder.t0 : NaN;
      const wait = Number.isFinite(retryAt) ? retryAt - recorder.now() : 1000;
      await sleep(Math.min(Math.max(wait, 500), 10_000) + jitter(0, 1000));
      key = randomUUID();
      if (!ctx.room) altcha = await ctx.rules.payloadFor(b, plan.rand);
    } else if (a.status === 403 && type.endsWith('bot-check-failed')) {
      return finish(b, STOPPED_BY_BOT_CHECK + str(a.body.reason));
    } else if (a.status === 403 && type.endsWith('not-admitted') && admission) {
      // The admission's session ended (or was spent) before a checkout: the ticket says expired.
      return finish(b, 'room_expired', `admission lapsed before a checkout: ${str(a.body.detail)}`);
    } else if (a.status === 503 || a.status === 429 || a.status === 502 || a.status === 504) {
      // 502/504: a balancer between the buyer and an API that died; the same key joins the purchase.
      b.note = `${a.status} ${type}`.trim();
      if (a.body.retryWithNewKey === true) {
        key = randomUUID();
        // That key's purchase spent the solution: a new key needs a new one (without a room).
        if (!ctx.room) altcha = await ctx.rules.payloadFor(b, plan.rand);
      }
      await sleep(jitter(1000, 2500));
    } else {
      return finish(b, `error ${a.status} ${type}`.trim(), str(a.body.detail));
    }
  }

  b.checkoutAt = recorder.now();
  b.phase = 'holding';
  b.holdExpiresAt =
    typeof checkout.holdExpiresAt === 'string' ? Date.parse(checkout.holdExpiresAt) - recorder.t0 : undefined;
  b.sessionId = typeof checkout.checkoutUrl === 'string' ? sessionIdOfCheckoutUrl(checkout.checkoutUrl) : undefined;
  b.status = typeof checkout.status === 'string' ? checkout.status : undefined;
  if (b.sessionId) await act(ctx, b, plan);
  b.phase = 'settling';
  await watchPurchase(ctx, b, authorization, plan);
}

function finish(b: BuyerRecord, outcome: string, note?: string): void {
  b.outcome = outcome;
  if (note) b.note = note;
  b.phase = 'done';
}

/** The buyer at the payment page, through the emulator's buyer controls. */
async function act(ctx: SaleContext, b: BuyerRecord, plan: BuyerPlan): Promise<void> {
  // A session that collects an address is completed with one (drill/rules.ts).
  const shipping = ctx.rules.shippingFor(b, Number(b.buyerId.split('-').pop()));
  const pay = async (outcome: string, extra: Record<string, unknown> = {}): Promise<boolean> => {
    const where = shipping && (outcome === 'succeeded' || outcome === 'async_pending') ? { shipping } : {};
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await ctx.emulator.call('POST', `/_emulator/sessions/${b.sessionId}/pay`, `pay ${outcome}`, {
          body: { outcome, ...where, ...extra },
        });
        return r.status === 200;
      } catch (err) {
        if (attempt >= 2) {
          b.note = `pay ${outcome}: ${(err as Error).message}`;
          return false;
        }
        await sleep(500);
      }
    }
  };
  const paid = (how: Paid) => {
    b.paid = how;
    b.paidAt = ctx.recorder.now();
  };
  const holdEnd = b.holdExpiresAt ?? ctx.recorder.now();
  switch (plan.behaviour) {
    // A bot that got this far pays at once, to the farm's address: the address limit is what is left.
    case 'bot':
    case 'pay':
      await sleep(plan.thinkMs);
      if (await pay('succeeded')) paid('card');
      break;
    case 'decline':
      for (let i = 0; i < plan.declines; i++) {
        await sleep(plan.thinkMs / 2);
        await pay('declined');
      }
      if (await pay('succeeded')) paid('after_decline');
      break;
    case 'delayed':
    case 'delayed_fail':
      await sleep(plan.thinkMs);
      if (await pay('async_pending')) {
        paid('bank_debit');
        await sleep(plan.debitMs);
        if (plan.behaviour === 'delayed') {
          await pay('async_succeeded');
        } else if (await pay('async_failed')) {
          b.paid = undefined;
          b.debitFailed = true;
        }
      }
      break;
    case 'late':
      await sleep(holdEnd + plan.lateByMs - ctx.recorder.now());
      // Once the saga has closed the session at the lapse, `force` is the buyer whose press of Pay
      // crossed the expiry: Stripe reports the payment anyway, and the saga must settle it.
      if (await pay('succeeded')) paid('late');
      else if (await pay('succeeded', { force: true })) paid('late_raced_expiry');
      break;
    case 'abandon':
      break;
  }
}

/** Polls GET /v1/purchases/:id (1 s, growing to 5 s) until the purchase settled, or the drill stops waiting. */
async function watchPurchase(ctx: SaleContext, b: BuyerRecord, authorization: string, plan: BuyerPlan): Promise<void> {
  const { recorder } = ctx;
  const settled = () => {
    if (!b.status) return false;
    if (b.paid) return PAID_FINAL.has(b.status) && (b.status !== 'refunded' || !!b.refund);
    return !(HOLDING_STATUSES as readonly string[]).includes(b.status);
  };
  // An abandoned or late checkout cannot settle before its hold lapses: no point asking earlier.
  if (!b.paid && b.holdExpiresAt !== undefined) await sleep(b.holdExpiresAt + 1000 - recorder.now());
  let every = 1000;
  for (;;) {
    try {
      const r = await ctx.poll.call('GET', `/v1/purchases/${b.purchaseId}`, '/v1/purchases/:id', {
        headers: { authorization },
      });
      if (r.status === 200) {
        b.status = String(r.body.status);
        const refund = r.body.refund as { status?: unknown; reason?: unknown } | undefined;
        b.refund = refund ? { status: str(refund.status), reason: str(refund.reason) } : undefined;
      }
    } catch {
      // the next poll tries again
    }
    if (settled()) return finish(b, b.status!);
    if (recorder.now() > ctx.settleDeadline()) return finish(b, `unsettled ${b.status ?? 'unknown'}`);
    await sleep(every * (0.8 + plan.rand() * 0.4));
    every = Math.min(5000, every * 1.5);
  }
}
