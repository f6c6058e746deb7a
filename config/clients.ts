import { Connection } from '@temporalio/client';
import pg from 'pg';
import Stripe from 'stripe';
import type { StripeConfig } from './index';

// Long-lived clients, built once by an entry point from its configuration.

/**
 * A Postgres pool with an error listener: an idle connection the server dropped is replaced on next
 * use, and is logged rather than crashing the process.
 */
export function createPool(databaseUrl: string, max: number, log: (msg: string) => void): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max });
  pool.on('error', (err) => log(`postgres connection error: ${err.message}`));
  return pool;
}

/** stripe-node against api.stripe.com, or against the payments emulator when `stripeApiUrl` is given. */
export function createStripe(config: StripeConfig): Stripe {
  // Temporal retries activities with the same idempotency key; stripe-node need not retry too.
  const common = { maxNetworkRetries: 0, timeout: 15_000 };
  if (!config.stripeApiUrl) return new Stripe(config.stripeSecretKey, common);
  const u = new URL(config.stripeApiUrl);
  return new Stripe(config.stripeSecretKey, {
    ...common,
    host: u.hostname,
    port: Number(u.port || (u.protocol === 'https:' ? 443 : 80)),
    protocol: u.protocol.replace(':', '') as 'http' | 'https',
  });
}

/** A Temporal client connection (the API and the CLIs; the worker uses a NativeConnection). */
export function connectTemporal(address: string): Promise<Connection> {
  return Connection.connect({ address, connectTimeout: '10s' });
}
