// What the drill drills: the local stack it starts (dev/local-system.ts, the launcher bench:crowd
// uses too), the production shape (dev/cluster.ts, --cluster), or a running deployment named by
// --base. Plus the clients of its inside checks.
import { Client } from '@temporalio/client';
import type Stripe from 'stripe';
import { connectTemporal, createPool, createStripe } from '../config/clients';
import { startCluster, type Cluster } from '../dev/cluster';
import { startLocalSystem } from '../dev/local-system';
import type { Db } from '../store/db';
import type { DrillOptions } from './options';

export interface Target {
  base: string;
  /** Where the buyers go: `base`, or every API when several run without a balancer. */
  apiUrls: string[];
  adminToken: string;
  buyerSecret: string;
  emulatorUrl: string;
  describe: string;
  /** Stripe's view of the money, through the emulator (it accepts any test key). */
  stripe: Stripe;
  db?: Db;
  temporal?: Client;
  /** With --cluster: its processes, to kill and to meter. */
  cluster?: Cluster;
  /** Closes the clients and stops what the drill started; never throws. */
  close(): Promise<void>;
}

export async function openTarget(
  opts: DrillOptions,
  env: NodeJS.ProcessEnv,
  o: { say: (line: string) => void; signal: AbortSignal; onCrash: (why: string) => void },
): Promise<Target> {
  const closers: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const c of closers.reverse()) await c().catch(() => {});
    closers.length = 0;
  };
  try {
    let where: Omit<Target, 'stripe' | 'db' | 'temporal' | 'close' | 'apiUrls'> & {
      apiUrls?: string[];
      databaseUrl?: string;
      temporalAddress?: string;
      temporalNamespace: string;
    };
    if (opts.base) {
      where = {
        base: opts.base,
        adminToken: opts.adminToken!,
        buyerSecret: opts.buyerTokenSecret!,
        emulatorUrl: opts.emulatorUrl!,
        describe: opts.base,
        databaseUrl: env.DATABASE_URL || undefined,
        temporalAddress: env.TEMPORAL_ADDRESS || undefined,
        temporalNamespace: env.TEMPORAL_NAMESPACE || 'default',
      };
    } else {
      const launch = {
        name: 'drill',
        say: o.say,
        log: opts.verbose ? o.say : undefined,
        signal: o.signal,
        // One machine plays the whole crowd from one address: the per-IP limits would turn the drill away.
        // The simulated humans solve the bot check on this machine too: a low cost keeps their CPU out of the measure.
        apiEnv: {
          RATE_LIMIT_PER_IP_PER_SECOND: '0',
          RATE_LIMIT_PER_BUYER_PER_MINUTE: '0',
          RATE_LIMIT_CHALLENGES_PER_IP_PER_SECOND: '0',
          BOT_CHECK_MAX_NUMBER: String(opts.botCheckMaxNumber),
        },
        onUnexpectedExit: (name: string, info: { code: number | null; signal: string | null }, output: string) =>
          o.onCrash(`${name} exited (${info.code ?? info.signal}) during the drill:\n${output}`),
      };
      if (opts.cluster) {
        const cluster = await startCluster({ ...launch, ...opts.cluster });
        closers.push(() => cluster.stop());
        where = { ...cluster, cluster, apiUrls: cluster.balancer ? [cluster.base] : cluster.apiUrls };
      } else {
        const system = await startLocalSystem(launch);
        closers.push(() => system.stop());
        where = { ...system, describe: 'the local stack (API, worker and emulator in child processes)' };
      }
    }
    const target: Target = {
      ...where,
      apiUrls: where.apiUrls ?? [where.base],
      stripe: createStripe({ stripeSecretKey: 'sk_test_drill', stripeApiUrl: where.emulatorUrl }),
      close,
    };
    if (where.databaseUrl) {
      const pool = createPool(where.databaseUrl, 4, (msg) => o.say(msg));
      closers.push(() => pool.end());
      target.db = pool;
    }
    if (where.temporalAddress) {
      const connection = await connectTemporal({ address: where.temporalAddress, namespace: where.temporalNamespace });
      closers.push(() => connection.close());
      target.temporal = new Client({ connection, namespace: where.temporalNamespace });
    }
    return target;
  } catch (err) {
    await close();
    throw err;
  }
}
