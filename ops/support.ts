// `npm run support -- refund <purchaseId> --reason "..." [--restock]`: the support refund beside
// `POST /v1/support/purchases/:id/refund`, through the same idempotent saga (`refund-<purchaseId>`),
// so running it twice never refunds twice. `refund-oversold <sku>` is the remedy for orders sold
// beyond stock on purpose (an oversell allowance): each flagged order is refunded and its unit goes
// back to the allowance. Exit 0 accepted (or already refunded), 1 not found or not refundable,
// 2 usage or configuration errors.
import os from 'node:os';
import { parseArgs } from 'node:util';
import { requestSupportRefund } from '../client/refunds';
import { listOversoldOrders } from '../store/purchases';
import { openCliClients, runCli, UsageError } from './cli';

const USAGE = `usage: npm run support -- refund <purchaseId> --reason "why" [--restock]
       npm run support -- refund-oversold <sku> --reason "why"

refund: refunds a confirmed purchase in full (Stripe refund keyed by the purchase id) and, with
--restock, puts the unit back on sale. Running it again for the same purchase does not refund twice.
refund-oversold: refunds every order of <sku> flagged as sold beyond stock (oversell allowance),
returning those units to the allowance. Safe to run again.

Environment: DATABASE_URL (required), TEMPORAL_ADDRESS (default 127.0.0.1:7233),
TEMPORAL_NAMESPACE (default default), TASK_QUEUE (default purchases).`;

type Args =
  | { command: 'refund'; purchaseId: string; reason: string; restock: boolean }
  | { command: 'refund-oversold'; sku: string; reason: string };

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
  const [command, target, ...extra] = positionals;
  if (command !== 'refund' && command !== 'refund-oversold') {
    throw new UsageError(command ? `unknown command: ${command}` : 'missing command: refund or refund-oversold');
  }
  if (!target?.trim()) throw new UsageError(command === 'refund' ? 'missing <purchaseId>' : 'missing <sku>');
  if (extra.length) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
  const reason = values.reason?.trim();
  if (!reason) throw new UsageError('--reason is required (it goes to the buyer and the audit trail)');
  if (reason.length > 500) throw new UsageError('--reason must be at most 500 characters');
  if (command === 'refund-oversold') {
    if (values.restock)
      throw new UsageError('--restock does not apply: oversold units always go back to the allowance');
    return { command, sku: target.trim(), reason };
  }
  return { command, purchaseId: target.trim(), reason, restock: values.restock };
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
  const clients = await openCliClients('support', { db: 'required', temporal: true });
  const db = clients.db!;
  const deps = { db, temporal: clients.temporal!, taskQueue: clients.taskQueue };
  const actor = `support-cli:${operator()}`;
  const refundOne = async (purchaseId: string, reason: string, restock: boolean): Promise<number> => {
    const answer = await requestSupportRefund(deps, { purchaseId, reason, restock, actor });
    switch (answer.outcome) {
      case 'not_found':
        console.error(`support: no purchase ${purchaseId}`);
        return 1;
      case 'not_refundable':
        console.error(`support: ${purchaseId} not refundable: ${answer.detail}`);
        return 1;
      case 'accepted': {
        const r = answer.refund;
        const back = answer.restocked === undefined ? '' : answer.restocked ? ', unit back on sale' : ', not restocked';
        const done = r.status === 'pending' ? 'refund requested (still in progress)' : `refund ${r.status}`;
        console.log(`purchase ${answer.purchaseId}: ${done}${back}; reason: ${r.reason}`);
        return 0;
      }
    }
  };
  try {
    if (args.command === 'refund') return await refundOne(args.purchaseId, args.reason, args.restock);
    const flagged = await listOversoldOrders(db, args.sku);
    if (flagged.length === 0) {
      console.log(`no orders of ${args.sku} are flagged as oversold`);
      return 0;
    }
    let failures = 0;
    for (const purchaseId of flagged) failures += await refundOne(purchaseId, args.reason, true);
    console.log(`${flagged.length - failures} of ${flagged.length} oversold order(s) of ${args.sku} refunded`);
    return failures ? 1 : 0;
  } finally {
    await clients.close();
  }
}

runCli('support', USAGE, parse, main);
