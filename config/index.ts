// One typed, validated configuration per process, read from the environment by the entry points
// (api/main.ts, worker/main.ts, the ops/ CLIs) and nowhere else. A missing or malformed value
// stops the process with a message naming every problem at once.

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

/** What every process that talks to Postgres and Temporal needs. */
export interface CommonConfig {
  databaseUrl: string;
  temporalAddress: string;
  temporalNamespace: string;
  taskQueue: string;
}

export interface StripeConfig {
  stripeSecretKey: string;
  /** Set for the local payments emulator (`http://127.0.0.1:12111`); unset means api.stripe.com. */
  stripeApiUrl?: string;
}

export interface ApiConfig extends CommonConfig, StripeConfig {
  stripeWebhookSecret: string;
  port: number;
  host: string;
  adminToken: string;
  supportToken: string;
  /** How long /readyz says 503 before the listener closes on SIGTERM. */
  shutdownGraceMs: number;
  /** How long POST /v1/purchases waits for the hold and the Checkout Session before answering 503. */
  purchaseTimeoutMs: number;
  /** How often the gate reads every SKU's stock again even without a notification. */
  gateResyncMs: number;
}

export interface WorkerConfig extends CommonConfig, StripeConfig {
  /** Base of the Checkout success and cancel URLs. */
  publicUrl: string;
  sweepIntervalMs: number;
}

/** Collects every problem of one environment before failing, so one run names them all. */
class Reader {
  readonly problems: string[] = [];
  constructor(readonly env: Env) {}

  need(name: string, why: string): string {
    const v = this.env[name];
    if (!v) this.problems.push(`${name} is required (${why})`);
    return v ?? '';
  }

  text(name: string, dflt: string): string {
    return this.env[name] || dflt;
  }

  int(name: string, dflt: number, min: number): number {
    const raw = this.env[name];
    if (raw === undefined || raw === '') return dflt;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) this.problems.push(`${name} must be an integer >= ${min}, got "${raw}"`);
    return n;
  }

  done<T>(config: T): T {
    if (this.problems.length) {
      throw new ConfigError(`invalid configuration:\n  - ${this.problems.join('\n  - ')}`);
    }
    return config;
  }
}

function temporal(r: Reader): Omit<CommonConfig, 'databaseUrl'> {
  return {
    temporalAddress: r.text('TEMPORAL_ADDRESS', '127.0.0.1:7233'),
    temporalNamespace: r.text('TEMPORAL_NAMESPACE', 'default'),
    taskQueue: r.text('TASK_QUEUE', 'purchases'),
  };
}

function common(r: Reader): CommonConfig {
  return { databaseUrl: r.need('DATABASE_URL', 'the Postgres holding stock and purchases'), ...temporal(r) };
}

/** A live-mode Stripe key: real money moves, and test-mode events are not ours. */
export function isLiveKey(key: string): boolean {
  return /^(sk|rk)_live_/.test(key);
}

function stripe(r: Reader): StripeConfig {
  const stripeApiUrl = r.env.STRIPE_API_URL || undefined;
  if (stripeApiUrl && !/^https?:\/\/[^/]+\/?$/.test(stripeApiUrl)) {
    r.problems.push(`STRIPE_API_URL must look like http://host:port, got "${stripeApiUrl}"`);
  }
  return {
    stripeSecretKey: r.need(
      'STRIPE_SECRET_KEY',
      'sk_live_/sk_test_ key, or any value with STRIPE_API_URL for the emulator',
    ),
    stripeApiUrl,
  };
}

export function loadApiConfig(env: Env): ApiConfig {
  const r = new Reader(env);
  return r.done({
    ...common(r),
    ...stripe(r),
    stripeWebhookSecret: r.need('STRIPE_WEBHOOK_SECRET', 'whsec_ secret that signs Stripe webhooks'),
    port: r.int('PORT', 3000, 0),
    host: r.text('HOST', '127.0.0.1'),
    adminToken: r.need('ADMIN_TOKEN', 'bearer token for the catalogue routes'),
    supportToken: r.need('SUPPORT_TOKEN', 'bearer token for support refunds'),
    shutdownGraceMs: r.int('SHUTDOWN_GRACE_MS', 5000, 0),
    purchaseTimeoutMs: r.int('PURCHASE_TIMEOUT_MS', 20_000, 100),
    gateResyncMs: r.int('GATE_RESYNC_MS', 5_000, 100),
  });
}

export function loadWorkerConfig(env: Env): WorkerConfig {
  const r = new Reader(env);
  return r.done({
    ...common(r),
    ...stripe(r),
    publicUrl: r.text('PUBLIC_URL', `http://127.0.0.1:${env.PORT || 3000}`).replace(/\/$/, ''),
    sweepIntervalMs: r.int('SWEEP_INTERVAL_MS', 5000, 100),
  });
}

/** The operator CLIs: Postgres always, Temporal settings (connected only by the CLIs that need it). */
export function loadCliConfig(env: Env): CommonConfig {
  const r = new Reader(env);
  return r.done(common(r));
}

/** The CLIs that can work without Postgres (`sagas stuck` adds database checks when it has one). */
export function loadTemporalCliConfig(env: Env): Omit<CommonConfig, 'databaseUrl'> & { databaseUrl?: string } {
  const r = new Reader(env);
  return r.done({ ...temporal(r), databaseUrl: env.DATABASE_URL || undefined });
}
