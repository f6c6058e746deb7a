// `npm run support -- refund <purchaseId> --reason "..." [--restock]`: the support refund beside
// `POST /v1/support/purchases/:id/refund`, through the same idempotent saga (`refund-<purchaseId>`),
// so running it twice never refunds twice. Exit 0 accepted (or already refunded), 1 not found or
// not refundable, 2 usage or configuration errors.
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Client } from '@temporalio/client';
import { connectTemporalFromEnv, runCli, UsageError } from './cli';
import pg from 'pg';
import { requestSupportRefund } from './support';

const USAGE = `usage: npm run support -- refund <purchaseId> --reason "why" [--restock]

Refunds a confirmed purchase in full (Stripe refund keyed by the purchase id) and, with --restock,
puts the unit back on sale. Running it again for the same purchase does not refund twice.

Environment: DATABASE_URL (required), TEMPORAL_ADDRESS (default 127.0.0.1:7233),
TEMPORAL_NAMESPACE (default default), TASK_QUEUE (default purchases).`;

interface Args {
  purchaseId: string;
  reason: string;
  restock: boolean;
}

function parse(argv: string[]): Args | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        reason: { type: 'string' },
        restock: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return 'help';
  const [command, purchaseId, ...extra] = positionals;
  if (command !== 'refund') throw new UsageError(command ? `unknown command: ${command}` : 'missing command: refund');
  if (!purchaseId?.trim()) throw new UsageError('missing <purchaseId>');
  if (extra.length) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
  const reason = values.reason?.trim();
  if (!reason) throw new UsageError('--reason is required (it goes to the buyer and the audit trail)');
  if (reason.length > 500) throw new UsageError('--reason must be at most 500 characters');
  return { purchaseId: purchaseId.trim(), reason, restock: values.restock };
}

/** Who ran it, for the audit trail. `os.userInfo()` throws for a uid without a passwd entry (containers). */
function operator(): string {
  try {
    return os.userInfo().username;
  } catch {
    return process.env.USER || `uid-${process.getuid?.() ?? 'unknown'}`;
  }
}

async function main(args: Args): Promise<number> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    console.error(
      'support: DATABASE_URL is required (the Postgres holding purchases), e.g. postgres://user@host:5432/flash_sale',
    );
    return 2;
  }
  const taskQueue = process.env.TASK_QUEUE || 'purchases';

  const temporal = await connectTemporalFromEnv('support');
  if (!temporal) return 1;
  const { connection, namespace } = temporal;
  const db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  try {
    const answer = await requestSupportRefund(
      { db, temporal: new Client({ connection, namespace }), taskQueue },
      { ...args, actor: `support-cli:${operator()}` },
    );
    switch (answer.outcome) {
      case 'not_found':
        console.error(`support: no purchase ${args.purchaseId}`);
        return 1;
      case 'not_refundable':
        console.error(`support: not refundable: ${answer.detail}`);
        return 1;
      case 'accepted': {
        const r = answer.refund;
        const restock =
          answer.restocked === undefined ? '' : answer.restocked ? ', unit back on sale' : ', not restocked';
        const done = r.status === 'pending' ? 'refund requested (still in progress)' : `refund ${r.status}`;
        console.log(`purchase ${answer.purchaseId}: ${done}${restock}; reason: ${r.reason}`);
        return 0;
      }
    }
  } catch (err) {
    console.error(`support: ${(err as Error).message}`);
    return 1;
  } finally {
    await connection.close();
    await db.end();
  }
}

runCli('support', USAGE, parse, main);
