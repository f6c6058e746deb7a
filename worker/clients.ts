import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import Stripe from 'stripe';

/** stripe-node against api.stripe.com, or against the payments emulator when `apiUrl` is given. */
export function createStripe(secretKey: string, apiUrl?: string): Stripe {
  if (!apiUrl) return new Stripe(secretKey, { maxNetworkRetries: 0, timeout: 15_000 });
  const u = new URL(apiUrl);
  return new Stripe(secretKey, {
    host: u.hostname,
    port: Number(u.port || (u.protocol === 'https:' ? 443 : 80)),
    protocol: u.protocol.replace(':', '') as 'http' | 'https',
    // Temporal retries activities with the same idempotency key; stripe-node need not retry too.
    maxNetworkRetries: 0,
    timeout: 15_000,
  });
}

export async function connectTemporalClient(address: string): Promise<Connection> {
  return Connection.connect({ address });
}

export async function connectTemporalWorker(address: string): Promise<NativeConnection> {
  return NativeConnection.connect({ address });
}
