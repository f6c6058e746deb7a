// What the drill drills: the local stack it starts (dev/local-system.ts, the launcher bench:crowd
// uses too), the production shape (dev/cluster.ts, --cluster), or a running deployment named by
// --base. Plus the clients of its inside checks.
import { Client } from '@temporalio/client';
import type Stripe from 'stripe';
import { connectTemporal, createPool, createStripe } from '../config/clients';
import { startCluster, type Cluster } from '../dev/cluster';
import { DRILL_DEPLOYMENT } from './faults';
import { startLocalSystem } from '../dev/local-system';
import type { Db } from '../store/db';
import { crowdAddresses, loopbackAddressesWork } from './addresses';
import { LogTally } from './log-tally';
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
  /** The lines the processes the drill started have logged (none against --base). */
  logs?: LogTally;
  /** Where each new connection of the crowd comes from, when the per-address limits are on for it. */
  crowdAddress?: () => string;
  /** The per-address limits the APIs run with, in words. */
  addressLimits: string;
  /** Closes the clients and stops what the drill started; never throws. */
  close(): Promise<void>;
}

/**
 * The drill's environment with every per-address limit back on: purchases and page reads at
 * `limit` (--address-limit, production's 100 by default), any other at its default.
 */
function withAddressLimits(env: Record<string, string>, limit: number): Record<string, string> {
  const rest = Object.entries(env).filter(([name]) => !/_PER_IP_PER_SECOND$/.test(name));
  return {
    ...Object.fromEntries(rest),
    RATE_LIMIT_PER_IP_PER_SECOND: String(limit),
    RATE_LIMIT_PAGES_PER_IP_PER_SECOND: String(limit),
  };
}

/** The service's Stripe budget for an account limited to `perSecond` calls (STRIPE_MAX_* of config/variables/tuning.ts). */
function stripeBudgetEnv(perSecond: number): Record<string, string> {
  return { STRIPE_MAX_REQUESTS_PER_SECOND: String(perSecond), STRIPE_MAX_SESSIONS_PER_SECOND: String(perSecond) };
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
        addressLimits: 'as the deployment has them',
        adminToken: opts.adminToken!,
        buyerSecret: opts.buyerTokenSecret!,
        emulatorUrl: opts.emulatorUrl!,
        describe: opts.base,
        databaseUrl: env.DATABASE_URL || undefined,
        temporalAddress: env.TEMPORAL_ADDRESS || undefined,
        temporalNamespace: env.TEMPORAL_NAMESPACE || 'default',
      };
    } else {
      const logs = new LogTally();
      const launch = {
        name: 'drill',
        say: o.say,
        log: (line: string) => {
          logs.line(line);
          if (opts.verbose) o.say(line);
        },
        signal: o.signal,
        // One machine plays the whole crowd from one address: the per-IP limits would turn the drill away.
        // The simulated humans solve the bot check on this machine too: a low cost keeps their CPU out of the measure.
        apiEnv: {
          RATE_LIMIT_PER_IP_PER_SECOND: '0',
          RATE_LIMIT_PER_BUYER_PER_MINUTE: '0',
          RATE_LIMIT_CHALLENGES_PER_IP_PER_SECOND: '0',
          BOT_CHECK_MAX_NUMBER: String(opts.botCheckMaxNumber),
        },
        // An emulator limited to N calls a second stands for an account whose limit is N: the service's
        // budget is set to it, as an operator sets it for the account (nothing else shares it here).
        ...(opts.stripeRate ? { env: stripeBudgetEnv(opts.stripeRate) } : {}),
        onUnexpectedExit: (name: string, info: { code: number | null; signal: string | null }, output: string) =>
          o.onCrash(`${name} exited (${info.code ?? info.signal}) during the drill:\n${output}`),
      };
      if (opts.cluster) {
        // The production shape, limits and all, where the crowd can come from many addresses.
        const spread = await loopbackAddressesWork();
        if (!spread && opts.abuser)
          throw new Error('--abuser: this machine does not route 127.0.0.0/8 to loopback (only 127.0.0.1)');
        const apiEnv = spread ? withAddressLimits(launch.apiEnv, opts.addressLimit) : launch.apiEnv;
        const deploys = opts.faults.some((f) => f.kind === 'deploy');
        const cluster = await startCluster({
          ...launch,
          apiEnv,
          ...opts.cluster,
          // A planned deploy needs versioned workers from the start (Worker Versioning).
          ...(deploys ? { deploymentName: DRILL_DEPLOYMENT } : {}),
        });
        closers.push(() => cluster.stop());
        where = {
          ...cluster,
          cluster,
          logs,
          apiUrls: cluster.balancer ? [cluster.base] : cluster.apiUrls,
          ...(spread ? { crowdAddress: crowdAddresses() } : {}),
          addressLimits: spread
            ? `on, per API process: ${opts.addressLimit} purchase requests and ${opts.addressLimit} page reads a second per address${cluster.balancer ? ', the address from the balancer’s X-Forwarded-For' : ''}; the crowd on many loopback addresses`
            : 'off: this machine does not route 127.0.0.0/8 to loopback, so the crowd has one address',
        };
      } else {
        const system = await startLocalSystem(launch);
        closers.push(() => system.stop());
        where = {
          ...system,
          logs,
          describe: 'the local stack (API, worker and emulator in child processes)',
          addressLimits: 'off (the crowd plays from one address)',
        };
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
