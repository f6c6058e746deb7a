export interface FaultSpec {
  /** A path prefix (`/v1/checkout/sessions`), or a glob where each `*` matches any characters (`/v1/refunds*`). */
  path: string;
  method?: string;
  /** HTTP status to fail with; default 500, or none when only `latencyMs` is given. */
  status?: number;
  /** How many matching calls the fault applies to; default 1, or no limit when `rate` is given. */
  count?: number;
  latencyMs?: number;
  /**
   * The share of matching calls the fault applies to (0 < rate <= 1), drawn per call; default 1. A call
   * it spares goes on to the next matching fault, or is served.
   */
  rate?: number;
  /** Seeds the draws of a `rate` fault, so one sequence of calls meets the same faults again. */
  seed?: number;
  /**
   * Serve the call first (its Idempotency-Key keeps the real answer), then answer `status`: Stripe
   * did the work and the answer was lost on the way, so a retry with the same key gets the real one.
   */
  afterServing?: boolean;
  /**
   * The endpoint began and failed (a 5xx): Stripe keeps that answer under the call's Idempotency-Key
   * and replays it, with `Stripe-Should-Retry: false`, to every retry with the same key for 24 hours.
   */
  saved?: boolean;
}

export interface Fault {
  id: number;
  path: string;
  method: string | null;
  status: number | null;
  latencyMs: number;
  rate: number;
  /** Uses left; null when unlimited (a `rate` fault without `count`). */
  remaining: number | null;
  /** Calls the fault applied to. */
  hits: number;
  /** Matching calls it was drawn for (hits included). */
  seen: number;
  afterServing: boolean;
  saved: boolean;
}

type Armed = Fault & { matcher: (path: string) => boolean; draw: () => number };

/**
 * Faults armed through `POST /_emulator/faults`, consumed by the Stripe API calls they match, oldest
 * first. A fault consumed by a call is used up whether it fails the call or only delays it.
 */
export class FaultInjector {
  private faults: Armed[] = [];
  private nextId = 1;

  add(spec: FaultSpec): Fault {
    const rate = spec.rate ?? 1;
    const fault: Armed = {
      id: this.nextId++,
      path: spec.path,
      method: spec.method ? spec.method.toUpperCase() : null,
      status: spec.status ?? (spec.latencyMs ? null : 500),
      latencyMs: spec.latencyMs ?? 0,
      rate,
      remaining: spec.count ?? (spec.rate === undefined ? 1 : null),
      hits: 0,
      seen: 0,
      afterServing: spec.afterServing ?? false,
      saved: spec.saved ?? false,
      matcher: pathMatcher(spec.path),
      draw: spec.seed === undefined ? Math.random : seededRandom(spec.seed),
    };
    this.faults.push(fault);
    return describe(fault);
  }

  /** Consumes one use of the first armed fault matching the call (and drawn for it, for a `rate` fault), if any. */
  take(method: string, path: string): Fault | null {
    const fault = this.faults.find((f) => {
      if ((f.method !== null && f.method !== method) || !f.matcher(path)) return false;
      f.seen += 1;
      return f.rate >= 1 || f.draw() < f.rate;
    });
    if (!fault) return null;
    fault.hits += 1;
    if (fault.remaining !== null) {
      fault.remaining -= 1;
      if (fault.remaining <= 0) this.faults = this.faults.filter((f) => f !== fault);
    }
    return describe(fault);
  }

  list(): Fault[] {
    return this.faults.map(describe);
  }

  clear(): number {
    const cleared = this.faults.length;
    this.faults = [];
    return cleared;
  }
}

function describe(fault: Fault): Fault {
  const { id, path, method, status, latencyMs, rate, remaining, hits, seen, afterServing, saved } = fault;
  return { id, path, method, status, latencyMs, rate, remaining, hits, seen, afterServing, saved };
}

/** mulberry32: a small, fast PRNG, enough to make a fault's draws repeatable. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pathMatcher(pattern: string): (path: string) => boolean {
  if (!pattern.includes('*')) {
    const prefix = pattern.endsWith('/') ? pattern.slice(0, -1) : pattern;
    return (path) => path === prefix || path.startsWith(`${prefix}/`);
  }
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  const regex = new RegExp(`^${source}$`);
  return (path) => regex.test(path);
}
