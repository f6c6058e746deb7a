// `npm run support -- refund <purchaseId> --reason "..." [--restock]`: the support refund beside
// `POST /v1/support/purchases/:id/refund`, through the same idempotent saga (`refund-<purchaseId>`),
// so running it twice never refunds twice. `refund-oversold <sku>` is the remedy for orders sold
// beyond stock on purpose (an oversell allowance): each flagged order is refunded and its unit goes
// back to the allowance. `retry`, `settle`, `retry-stray`, `settle-stray` and `list-attention` are
// support's path for money in `needs_attention` (a Stripe step refused, a refund failed). `find`
// looks purchases up by buyer, Checkout Session or PaymentIntent. Exit 0 done, 1 not found, not
// applicable (or Stripe refused again), 2 usage or configuration errors. `notifications list|retry`
// shows and requeues the dead buyer notifications (ops/notifications.ts). `disputes` lists the
// disputed payments, the most urgent response deadline first (ops/disputes.ts).
import os from 'node:os';
import { requestSupportRefund } from '../client/refunds';
import { listOversoldOrders } from '../store/purchases';
import { actOnPurchase, actOnStray, listAttention, type AttentionDeps } from './attention';
import { openCliClients, runCli, unknownSku } from './cli';
import { printDisputes } from './disputes';
import { findAndPrint } from './find-purchases';
import { runNotifications } from './notifications';
import { parse, USAGE, type SupportArgs } from './support-args';

/** Who ran it, for the audit trail. `os.userInfo()` throws for a uid without a passwd entry (containers). */
function operator(): string {
  try {
    return os.userInfo().username;
  } catch {
    return process.env.USER || `uid-${process.getuid?.() ?? 'unknown'}`;
  }
}

/** The lookups read Postgres only: they work while Temporal is down. */
const POSTGRES_ONLY = ['find', 'notifications', 'disputes', 'list-attention'] as const;
const readsPostgresOnly = (a: SupportArgs): a is Extract<SupportArgs, { command: (typeof POSTGRES_ONLY)[number] }> =>
  (POSTGRES_ONLY as readonly string[]).includes(a.command);

async function main(args: SupportArgs): Promise<number> {
  const clients = await openCliClients('support', { db: 'required', temporal: !readsPostgresOnly(args) });
  const db = clients.db!;
  // A misspelt SKU would read as nothing to do: it is refused as reconcile refuses it.
  const sku = 'sku' in args ? args.sku : undefined;
  if (await unknownSku('support', db, sku, USAGE)) {
    await clients.close();
    return 2;
  }
  if (readsPostgresOnly(args)) {
    try {
      switch (args.command) {
        case 'disputes':
          return await printDisputes(db, args);
        case 'list-attention':
          return await listAttention(db, args.sku);
        case 'find':
          return await findAndPrint(db, args.by, clients.ui, args.json);
        case 'notifications':
          return await runNotifications(db, args);
      }
    } finally {
      await clients.close();
    }
  }
  const deps = { db, temporal: clients.temporal!, taskQueue: clients.taskQueue };
  const actor = `support-cli:${operator()}`;
  const refundOne = async (purchaseId: string, reason: string, restock: boolean, note?: string): Promise<number> => {
    const answer = await requestSupportRefund(deps, { purchaseId, reason, restock, actor, ...(note ? { note } : {}) });
    switch (answer.outcome) {
      case 'not_found':
        console.error(`support: no purchase ${purchaseId}`);
        return 1;
      case 'not_refundable':
        console.error(`support: ${purchaseId} not refundable: ${answer.detail}`);
        return 1;
      case 'needs_attention':
        console.error(`support: ${purchaseId}: ${answer.detail}`);
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
  const attention: AttentionDeps = { db, temporal: clients.temporal!, taskQueue: clients.taskQueue, actor };
  try {
    switch (args.command) {
      case 'refund':
        return await refundOne(args.purchaseId, args.reason, args.restock, args.note);
      case 'attend':
        return await (args.on === 'purchase' ? actOnPurchase : actOnStray)(attention, args.target, args.verb);
    }
    const flagged = await listOversoldOrders(db, args.sku);
    if (flagged.length === 0) {
      console.log(`no orders of ${args.sku} are flagged as oversold`);
      return 0;
    }
    let failures = 0;
    for (const purchaseId of flagged) failures += await refundOne(purchaseId, args.reason, true, args.note);
    console.log(`${flagged.length - failures} of ${flagged.length} oversold order(s) of ${args.sku} refunded`);
    return failures ? 1 : 0;
  } finally {
    await clients.close();
  }
}

runCli('support', USAGE, parse, main);
