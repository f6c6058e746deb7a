import { isGrpcServiceError, ServiceError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import type Koa from 'koa';
import { ping } from '../store/db';
import { requestLog } from './access-log';
import type { ApiDeps } from './deps';
import { Problem } from './problem';

// Postgres or Temporal unreachable is not a bug of the request: the client is answered 503
// `unavailable` with Retry-After (Stripe retries a webhook so answered), never 500, and quickly.

/** What a client is told to wait before trying again (seconds). */
export const OUTAGE_RETRY_AFTER_S = 2;
/** A request still running after this long checks that Postgres and Temporal are up... */
const CHECK_AFTER_MS = 1_000;
/** ...and again this often while it runs. */
const CHECK_EVERY_MS = 250;
/**
 * For this long after the last outage seen, a request running past CATCH_UP_CUT_MS is answered 503
 * even with both services up: the worker is reconnecting, its sagas are behind. At the first check,
 * with no probe first: the machine is loaded by the recovery too, and a cut at 1.5 s answered after
 * 2.1 s on a loaded 2-core machine, past the 2 s every answer is promised in.
 */
const CATCH_UP_MS = 10_000;
const CATCH_UP_CUT_MS = CHECK_AFTER_MS;
/** A probe that takes longer says nothing (a busy pool is not an outage); one result serves this long. */
const PROBE_MS = 400;
const PROBE_REUSE_MS = 500;
/** At most one log line per this long while answers are 503 for an outage. */
const LOG_EVERY_MS = 10_000;

export type Dependency = 'postgres' | 'temporal';

/**
 * SQLSTATEs of a Postgres that cannot serve now: class 08 (connection exception, matched by prefix),
 * 57014 (statement_timeout), 57P01-57P03 (shutting down, crashed, starting up), class 53 (too many
 * connections, out of memory or disk).
 */
const PG_OUTAGE = /^(08...|57014|57P0[123]|53...)$/;
/** Socket errors of a peer that is gone or unreachable (Node's `code`). */
const NET_OUTAGE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** node-postgres and pg-pool say these without a code: no connection in time, or the connection died. */
const PG_MESSAGES =
  /timeout exceeded when trying to connect|Connection terminated|Query read timeout|not queryable|connection timeout/i;
/** gRPC statuses of a server that is down, overloaded, or did not answer in time. */
const GRPC_OUTAGE = new Set([
  1, // CANCELLED
  4, // DEADLINE_EXCEEDED
  8, // RESOURCE_EXHAUSTED
  10, // ABORTED
  14, // UNAVAILABLE
]);

/** The error and its causes (`cause`, and the `errors` of an AggregateError), nearest first. */
function chain(err: unknown): unknown[] {
  const out: unknown[] = [];
  const queue = [err];
  while (queue.length && out.length < 10) {
    const e = queue.shift();
    if (typeof e !== 'object' || e === null || out.includes(e)) continue;
    out.push(e);
    const { cause, errors } = e as { cause?: unknown; errors?: unknown };
    if (cause !== undefined) queue.push(cause);
    if (Array.isArray(errors)) queue.push(...(errors as unknown[]));
  }
  return out;
}

/** Which service an error says is unreachable, or undefined for any other error (a bug stays a 500). */
export function outageOf(err: unknown): Dependency | undefined {
  const links = chain(err);
  let temporalWithoutStatus = false;
  for (const e of links) {
    if (isGrpcServiceError(e)) {
      if (GRPC_OUTAGE.has(e.code)) return 'temporal';
      // A status that says the request itself was refused (not found, invalid, ...): not an outage.
      return undefined;
    }
    if (e instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return 'temporal';
    if (e instanceof ServiceError) temporalWithoutStatus = true;
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (PG_OUTAGE.test(code) || NET_OUTAGE.has(code))) {
      return temporalWithoutStatus ? 'temporal' : 'postgres';
    }
    if (typeof message === 'string' && PG_MESSAGES.test(message)) return 'postgres';
  }
  // A ServiceError with no gRPC status behind it: the connection itself failed.
  return temporalWithoutStatus ? 'temporal' : undefined;
}

/**
 * A probe's failure that says the service is down, not merely slow: a refused or reset connection,
 * Postgres shutting down, gRPC UNAVAILABLE. Timeouts (a deadline, a full pool) say nothing: a
 * service under load is slow, and taking that for an outage would shed healthy requests.
 */
function isHardDown(err: unknown): boolean {
  for (const e of chain(err)) {
    if (isGrpcServiceError(e)) return Number(e.code) === 14; // UNAVAILABLE
    const { code } = e as { code?: unknown };
    if (typeof code === 'string' && (/^(08...|57P0[123])$/.test(code) || NET_OUTAGE.has(code))) {
      return code !== 'ETIMEDOUT';
    }
  }
  return false;
}

/** True when `err` means Postgres or Temporal is unreachable, slow past its timeout, or shutting down. */
export function isOutage(err: unknown): boolean {
  return outageOf(err) !== undefined;
}

export function outageProblem(): Problem {
  return new Problem(
    503,
    'unavailable',
    `a service this API depends on is unavailable; retry in ${OUTAGE_RETRY_AFTER_S} s`,
    {},
    { 'Retry-After': String(OUTAGE_RETRY_AFTER_S) },
  );
}

/** Settles with `p`'s outcome, or undefined after `ms` (the late outcome is dropped). */
function within<T>(ms: number, p: Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** A request cut short while it waited, saying why. */
class WaitCut extends Error {}

/** One quick look at both services, shared by every request that asks within PROBE_REUSE_MS. */
function createProbe(deps: Pick<ApiDeps, 'db' | 'temporal'>): () => Promise<Dependency | undefined> {
  let last: { at: number; result: Promise<Dependency | undefined> } | undefined;
  const look = (dep: Dependency, fn: () => Promise<unknown>) =>
    within(
      PROBE_MS,
      fn().then(
        () => undefined,
        (err: unknown) => (isHardDown(err) ? dep : undefined),
      ),
    );
  return () => {
    if (last && Date.now() - last.at < PROBE_REUSE_MS) return last.result;
    const result = Promise.all([
      look('postgres', () => ping(deps.db)),
      look('temporal', () =>
        deps.temporal.withDeadline(Date.now() + PROBE_MS, () => deps.temporal.workflowService.getSystemInfo({})),
      ),
    ]).then(([pg, temporal]) => pg ?? temporal);
    last = { at: Date.now(), result };
    return result;
  };
}

/**
 * Answers outages as 503 `unavailable` with Retry-After, never 500 and never late:
 * - an error thrown below that says Postgres or Temporal is unreachable (see `outageOf`);
 * - a request still running after CHECK_AFTER_MS while a probe finds one of them down (a purchase
 *   whose saga waits on a Postgres that just stopped), or after CATCH_UP_CUT_MS within CATCH_UP_MS
 *   of the last outage seen (the worker still reconnecting): answered at once, and left to finish in
 *   the background. Outside outages a slow request runs on to its own timeout.
 * An outage is seen only by the probe, when a service refuses connections (not when it is slow); the
 * probe runs after any outage error or 503 (a route that answered its own 503 because Temporal did
 * not take a call, /readyz). Sits inside
 * `problemMiddleware`, which renders the problem. Retrying is safe: the write routes are idempotent
 * (the same Idempotency-Key joins the same purchase; Stripe redelivers the same event).
 */
export function answerOutages(deps: Pick<ApiDeps, 'db' | 'temporal'>): Koa.Middleware {
  const probe = createProbe(deps);
  let lastOutageAt = -Infinity;
  const seen = (down: Dependency | undefined) => {
    if (down) lastOutageAt = Date.now();
    return down;
  };
  const look = () => void probe().then(seen);
  let loggedAt = -Infinity;
  let unlogged = 0;
  /** Logs an outage answer, at most one line every LOG_EVERY_MS. */
  const note = (ctx: Koa.Context, what: string) => {
    unlogged++;
    if (Date.now() - loggedAt < LOG_EVERY_MS) return;
    requestLog(ctx).warn(
      { unanswered: unlogged },
      `outage: ${what} (${ctx.method} ${ctx.path}); ${unlogged} answer(s) 503 since the last line`,
    );
    loggedAt = Date.now();
    unlogged = 0;
  };
  const catchingUp = () => Date.now() - lastOutageAt < CATCH_UP_MS;
  /**
   * Why a request running since `startedAt` is answered 503 now, or undefined to let it run. The
   * catch-up cut needs no probe: looked at first, it is not put off by one (up to PROBE_MS).
   */
  const reasonToCut = async (startedAt: number): Promise<WaitCut | undefined> => {
    const cutForCatchUp = () =>
      catchingUp() && Date.now() - startedAt >= CATCH_UP_CUT_MS
        ? new WaitCut('catching up after an outage')
        : undefined;
    const early = cutForCatchUp();
    if (early) return early;
    const down = seen(await probe());
    if (down) return new WaitCut(`${down} is down`);
    return cutForCatchUp();
  };
  /** When to look again: every CHECK_EVERY_MS, and at CATCH_UP_CUT_MS exactly while catching up. */
  const nextCheckIn = (startedAt: number): number => {
    const untilCatchUpCut = startedAt + CATCH_UP_CUT_MS - Date.now();
    return catchingUp() && untilCatchUpCut > 0 ? Math.min(CHECK_EVERY_MS, untilCatchUpCut) : CHECK_EVERY_MS;
  };
  return async (ctx, next) => {
    const startedAt = Date.now();
    const handling = next();
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const cut = new Promise<never>((_, reject) => {
      const check = () => {
        void reasonToCut(startedAt).then((reason) => {
          if (done) return;
          if (reason) reject(reason);
          else timer = setTimeout(check, nextCheckIn(startedAt));
        });
      };
      timer = setTimeout(check, CHECK_AFTER_MS);
    });
    try {
      await Promise.race([handling, cut]);
      if (ctx.status === 503) look();
    } catch (err) {
      if (err instanceof WaitCut) {
        note(ctx, `${err.message}; answered a request still waiting`);
        throw outageProblem();
      }
      const down = outageOf(err);
      if (!down) {
        if (err instanceof Problem && err.status === 503) look();
        throw err;
      }
      // Only the probe marks an outage (and arms the catch-up cut): a timeout under load is not one.
      look();
      note(ctx, `${down} unreachable: ${(err as Error).message}`);
      throw outageProblem();
    } finally {
      done = true;
      clearTimeout(timer);
      // Cut short, the handler still runs to its end; what it throws then has no one to answer.
      handling.catch(() => {});
      cut.catch(() => {});
    }
  };
}
