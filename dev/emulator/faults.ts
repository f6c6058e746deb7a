export interface FaultSpec {
  /** A path prefix (`/v1/checkout/sessions`), or a glob where each `*` matches any characters (`/v1/refunds*`). */
  path: string;
  method?: string;
  /** HTTP status to fail with; default 500, or none when only `latencyMs` is given. */
  status?: number;
  /** How many matching calls the fault applies to; default 1. */
  count?: number;
  latencyMs?: number;
}

export interface Fault {
  id: number;
  path: string;
  method: string | null;
  status: number | null;
  latencyMs: number;
  remaining: number;
  hits: number;
}

/**
 * Faults armed through `POST /_emulator/faults`, consumed by the Stripe API calls they match, oldest
 * first. A fault consumed by a call is used up whether it fails the call or only delays it.
 */
export class FaultInjector {
  private faults: Array<Fault & { matcher: (path: string) => boolean }> = [];
  private nextId = 1;

  add(spec: FaultSpec): Fault {
    const fault = {
      id: this.nextId++,
      path: spec.path,
      method: spec.method ? spec.method.toUpperCase() : null,
      status: spec.status ?? (spec.latencyMs ? null : 500),
      latencyMs: spec.latencyMs ?? 0,
      remaining: spec.count ?? 1,
      hits: 0,
      matcher: pathMatcher(spec.path),
    };
    this.faults.push(fault);
    return describe(fault);
  }

  /** Consumes one use of the first armed fault matching the call, if any. */
  take(method: string, path: string): Fault | null {
    const fault = this.faults.find((f) => (f.method === null || f.method === method) && f.matcher(path));
    if (!fault) return null;
    fault.remaining -= 1;
    fault.hits += 1;
    if (fault.remaining <= 0) this.faults = this.faults.filter((f) => f !== fault);
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
  const { id, path, method, status, latencyMs, remaining, hits } = fault;
  return { id, path, method, status, latencyMs, remaining, hits };
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
