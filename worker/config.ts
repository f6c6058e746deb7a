/**
 * One typed, validated configuration for the API and the worker, read from the environment by
 * their entry points only. A missing or malformed value stops the process with a message naming
 * every problem at once.
 */
export interface Config {
  databaseUrl: string;
  temporalAddress: string;
  temporalNamespace: string;
  taskQueue: string;
  stripeSecretKey: string;
  stripeWebhookSecret: string;
  /** Set for the local payments emulator (`http://127.0.0.1:12111`); unset means api.stripe.com. */
  stripeApiUrl?: string;
  publicUrl: string;
  port: number;
  host: string;
  adminToken: string;
  supportToken: string;
  sweepIntervalMs: number;
  /** API: how long /readyz says 503 before the listener closes on SIGTERM. */
  shutdownGraceMs: number;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

export function loadConfig(env: Env, role: 'api' | 'worker'): Config {
  const problems: string[] = [];
  const need = (name: string, why: string): string => {
    const v = env[name];
    if (!v) problems.push(`${name} is required (${why})`);
    return v ?? '';
  };
  const int = (name: string, dflt: number, min: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return dflt;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) problems.push(`${name} must be an integer >= ${min}, got "${raw}"`);
    return n;
  };
  const stripeApiUrl = env.STRIPE_API_URL || undefined;
  if (stripeApiUrl && !/^https?:\/\/[^/]+\/?$/.test(stripeApiUrl)) {
    problems.push(`STRIPE_API_URL must look like http://host:port, got "${stripeApiUrl}"`);
  }
  const config: Config = {
    databaseUrl: need('DATABASE_URL', 'the Postgres holding stock and purchases'),
    temporalAddress: env.TEMPORAL_ADDRESS || '127.0.0.1:7233',
    temporalNamespace: env.TEMPORAL_NAMESPACE || 'default',
    taskQueue: env.TASK_QUEUE || 'purchases',
    stripeSecretKey: need(
      'STRIPE_SECRET_KEY',
      'sk_live_/sk_test_ key, or any value with STRIPE_API_URL for the emulator',
    ),
    stripeWebhookSecret:
      role === 'api'
        ? need('STRIPE_WEBHOOK_SECRET', 'whsec_ secret that signs Stripe webhooks')
        : (env.STRIPE_WEBHOOK_SECRET ?? ''),
    stripeApiUrl,
    publicUrl: (env.PUBLIC_URL || `http://127.0.0.1:${env.PORT || 3000}`).replace(/\/$/, ''),
    port: int('PORT', 3000, 0),
    host: env.HOST || '127.0.0.1',
    adminToken: role === 'api' ? need('ADMIN_TOKEN', 'bearer token for the catalogue routes') : '',
    supportToken: role === 'api' ? need('SUPPORT_TOKEN', 'bearer token for support refunds') : '',
    sweepIntervalMs: int('SWEEP_INTERVAL_MS', 5000, 100),
    shutdownGraceMs: int('SHUTDOWN_GRACE_MS', 5000, 0),
  };
  if (problems.length) throw new ConfigError(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
  return config;
}
