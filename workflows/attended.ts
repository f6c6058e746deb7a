import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  patched,
  setHandler,
} from '@temporalio/workflow';
import type { RefundEvent, SupportAction } from '../vocabulary';
import { refundEventSignal, supportActionSignal } from './definitions';
import { DURATIONS } from './durations';

// Stripe steps that must happen once money is involved (expire a session, read it, refund), run so
// that no answer of Stripe's ends a saga without an outcome: a refusal is shown to support and tried
// again, and the saga keeps listening to its payment events while a call is being retried.

/** What support has said to this saga (signal `supportAction`), and the refunds' news (signal `refundEvent`). */
export class SupportDesk {
  retries = 0;
  settled?: { note: string; actor: string };
  private readonly refunds = new Map<string, RefundEvent>();

  /** Registers the two signal handlers; call once at the top of a workflow. */
  listen(): this {
    setHandler(supportActionSignal, (a: SupportAction) => {
      if (a.action === 'retry') this.retries++;
      else this.settled ??= { note: a.note, actor: a.actor };
    });
    setHandler(refundEventSignal, (e: RefundEvent) => {
      const known = this.refunds.get(e.refundId);
      if (!known || refundRank(e.status) >= refundRank(known.status)) this.refunds.set(e.refundId, e);
    });
    return this;
  }

  refund(refundId: string): RefundEvent | undefined {
    return this.refunds.get(refundId);
  }
}

/** How far a refund has got; Stripe's own order (pending, then succeeded, and a failure may follow). */
export function refundRank(status: string): number {
  return status === 'failed' ? 2 : status === 'succeeded' || status === 'canceled' ? 1 : 0;
}
export function refundSettled(status: string): boolean {
  return refundRank(status) > 0;
}

/** Stripe's message when an activity failed because Stripe refused the request for good (4xx). */
export function refusalOf(err: unknown): string | null {
  /* istanbul ignore if -- every call attended is an activity's: its failures are ActivityFailures */
  if (!(err instanceof ActivityFailure)) return null;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure && cause.type === 'StripeRejected') return cause.message;
  return null;
}

export type Attended<T> =
  | { outcome: 'done'; value: T }
  /** `interrupt` became true while the call ran or waited (a payment arrived): the call was cancelled. */
  | { outcome: 'interrupted' }
  /**
   * Support settled the step by hand. `whileCalling`: while the call itself was being retried (a 5xx,
   * no answer), not after a refusal. Either way the settlement is this step's alone
   * (SETTLE_ENDS_CALL_PATCH, SETTLEMENT_ONE_STEP_PATCH).
   */
  | { outcome: 'settled'; note: string; actor: string; whileCalling?: true };

/**
 * Support's settlement also ends a call the activity keeps retrying (Stripe answering 5xx, or not at
 * all), not only the wait after a refusal: `npm run support -- settle` reaches a saga stuck expiring a
 * session Stripe keeps failing. Sagas from before it heard support only between refusals; the patch
 * keeps their histories replaying (the settlement cancels the running activity: a new command).
 */
export const SETTLE_ENDS_CALL_PATCH = 'settle-ends-a-failing-call';

/**
 * Support's settlement of a step Stripe refused (a 4xx) is that step's alone too, as one made while
 * the call was retried: a payment that lands after a settled expire is refunded through Stripe. Sagas
 * from before it carried the settlement on and recorded that refund as settled by hand, with none
 * made; the patch keeps their histories replaying (the refund is a new command).
 */
export const SETTLEMENT_ONE_STEP_PATCH = 'settlement-is-one-steps';

export interface AttendOptions {
  desk: SupportDesk;
  /** Shows the refusal to support: the purchase moves to `needs_attention` with Stripe's message. */
  flag: (reason: string) => Promise<void>;
  /** Stops waiting on the call as soon as this holds. */
  interrupt?: () => boolean;
  /**
   * Support's settlement also ends the call while the activity retries it (SETTLE_ENDS_CALL_PATCH).
   * Only for a call that may be abandoned half-way: an expire (the session ends closed either way), never
   * a refund (one that went through at Stripe and was settled by hand too would pay the buyer twice).
   */
  settleEndsCall?: boolean;
}

/** Backoff between tries of a refused call: 5 s doubling to 1 hour, or at once on support's retry. */
function refusalBackoffMs(refusals: number): number {
  const { refusalBackoffFirstMs: first, refusalBackoffMaxMs: max } = DURATIONS;
  return Math.min(first * 2 ** Math.min(refusals, 10), max);
}

/**
 * Runs a Stripe step that must happen. Transient faults are retried by the activity's own policy;
 * a refusal flags the purchase (each time) and is tried again with backoff, until it
 * succeeds, support settles it by hand (also while a call is being retried), or `interrupt` holds.
 */
export async function attended<T>(what: string, call: () => Promise<T>, opts: AttendOptions): Promise<Attended<T>> {
  const { desk } = opts;
  const settleEndsCall = opts.settleEndsCall === true && patched(SETTLE_ENDS_CALL_PATCH);
  const interrupted = opts.interrupt ?? (() => false);
  const stopCall = settleEndsCall ? () => interrupted() || desk.settled !== undefined : opts.interrupt;
  for (let refusals = 0; ; refusals++) {
    if (desk.settled) return { outcome: 'settled', ...desk.settled };
    let answer: { value: T } | { error: unknown } | 'interrupted';
    try {
      answer = await raceInterrupt(call, stopCall);
    } catch (err) {
      if (isCancellation(err)) throw err;
      answer = { error: err };
    }
    // Read again: a signal may have settled it during the await. A payment outranks support's word.
    const byHand = desk.settled as SupportDesk['settled'];
    if (answer === 'interrupted' && !interrupted() && byHand)
      return { outcome: 'settled', ...byHand, whileCalling: true };
    if (answer === 'interrupted') return { outcome: 'interrupted' };
    if ('value' in answer) return { outcome: 'done', value: answer.value };
    const refusal = refusalOf(answer.error);
    if (!refusal) throw answer.error;
    // Counted before the refusal is shown: support may read it and retry while the flag's write returns.
    const retriesSeen = desk.retries;
    // Stripe's message names the step already ("refunding the payment: Stripe answered 402: ...").
    await opts.flag(refusal.startsWith(what) ? refusal : `${what}: ${refusal}`);
    await condition(
      () => desk.retries > retriesSeen || desk.settled !== undefined || interrupted(),
      refusalBackoffMs(refusals),
    );
    if (interrupted()) return { outcome: 'interrupted' };
  }
}

/** Runs `call`, and gives up on it (cancelling the activity) as soon as `interrupt` holds. */
async function raceInterrupt<T>(
  call: () => Promise<T>,
  interrupt?: () => boolean,
): Promise<{ value: T } | 'interrupted'> {
  if (!interrupt) return { value: await call() };
  const scope = new CancellationScope();
  const running = scope.run(call);
  const stop = scope.run(() => condition(interrupt));
  stop.catch(() => {}); // cancelled once the call wins
  running.catch(() => {}); // handled below, or cancelled once the interrupt wins
  try {
    return await Promise.race([running.then((value) => ({ value })), stop.then(() => 'interrupted' as const)]);
  } finally {
    // Cancels the wait for the interrupt, and the call when it is still running (the interrupt won).
    scope.cancel();
  }
}
