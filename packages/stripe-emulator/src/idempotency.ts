import { idempotencyEndpointMismatch, idempotencyInProgress, idempotencyMismatch } from './errors';

export interface StoredResponse {
  status: number;
  body: string;
  requestId: string;
  /** Headers replayed with it (a kept 5xx's `Stripe-Should-Retry`). */
  headers?: Record<string, string>;
}

interface Entry {
  endpoint: string;
  fingerprint: string;
  createdAt: number;
  response: StoredResponse | null;
}

/** The finished entries (in-progress ones are not worth keeping: their request died with the process). */
export type IdempotencySnapshot = Array<{ id: string } & Entry & { response: StoredResponse }>;

export type IdempotencyOutcome =
  | { kind: 'replay'; response: StoredResponse }
  | { kind: 'proceed'; save: (response: StoredResponse) => void; abandon: () => void };

const KEY_LIFETIME_MS = 24 * 60 * 60 * 1000;

/**
 * Stripe's idempotency layer: the first result of a key is replayed verbatim for the same endpoint and
 * parameters, refused for different ones, and keys are kept for 24 hours. Keys are scoped per API key.
 */
export class IdempotencyStore {
  private entries = new Map<string, Entry>();

  constructor(private readonly now: () => number) {}

  begin(scope: string, key: string, endpoint: string, params: unknown): IdempotencyOutcome {
    this.prune();
    const id = `${scope}\u0000${key}`;
    const fingerprint = canonicalJson(params);
    const existing = this.entries.get(id);
    if (existing) {
      if (existing.endpoint !== endpoint) throw idempotencyEndpointMismatch(key, existing.endpoint, endpoint);
      if (existing.fingerprint !== fingerprint) throw idempotencyMismatch(key);
      if (!existing.response) throw idempotencyInProgress(key);
      return { kind: 'replay', response: existing.response };
    }
    const entry: Entry = { endpoint, fingerprint, createdAt: this.now(), response: null };
    this.entries.set(id, entry);
    return {
      kind: 'proceed',
      save: (response) => {
        entry.response = response;
      },
      abandon: () => {
        if (this.entries.get(id) === entry) this.entries.delete(id);
      },
    };
  }

  clear(): void {
    this.entries.clear();
  }

  snapshot(): IdempotencySnapshot {
    this.prune();
    const out: IdempotencySnapshot = [];
    for (const [id, entry] of this.entries) if (entry.response) out.push({ id, ...entry, response: entry.response });
    return out;
  }

  restore(snapshot: IdempotencySnapshot): void {
    this.entries.clear();
    for (const { id, endpoint, fingerprint, createdAt, response } of snapshot) {
      this.entries.set(id, { endpoint, fingerprint, createdAt, response });
    }
    this.prune();
  }

  private prune(): void {
    const cutoff = this.now() - KEY_LIFETIME_MS;
    for (const [id, entry] of this.entries) {
      if (entry.createdAt < cutoff && entry.response) this.entries.delete(id);
    }
  }
}

/** JSON with object keys sorted, so the same parameters in another order compare equal. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}
