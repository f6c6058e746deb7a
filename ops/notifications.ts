// `npm run support -- notifications list|retry`: the buyer notifications that are dead (a channel
// refused them for good, or they ran out of attempts or age; workflows/notification.ts), and owing
// them again once the cause is mended (the merchant's endpoint fixed, the address corrected): the
// workers hand them to Temporal. Reads and writes Postgres only: it works while Temporal is down.
import type { Db } from '../store/db';
import { listDeadDeliveries, requeueDead } from '../store/notifications';
import { NOTIFICATION_HAND_OVER_MS } from '../vocabulary';
import type { NotificationsArgs } from './notifications-args';

/** The most a list prints (the alert says how many there are; requeue them with --all). */
const LIST_LIMIT = 500;

/** Exit 0 done (list and retry --all: also when none is dead), 1 a retry by id found no dead delivery among those named. */
export async function runNotifications(db: Db, args: NotificationsArgs): Promise<number> {
  if (args.action === 'list') {
    const dead = await listDeadDeliveries(db, { channel: args.channel, limit: LIST_LIMIT });
    if (args.json) {
      console.log(JSON.stringify({ data: dead }, null, 2));
      return 0;
    }
    if (dead.length === 0) {
      console.log(`no dead notifications${args.channel ? ` on ${args.channel}` : ''}`);
      return 0;
    }
    for (const d of dead) {
      console.log(
        `ntf_${d.id}  ${d.channel}  purchase ${d.purchaseId}  buyer ${d.buyerId}  ${d.kind}  ` +
          `${d.attempts} attempt(s), dead since ${d.deadAt}: ${d.lastError ?? '(no error recorded)'}`,
      );
    }
    const more = dead.length === LIST_LIMIT ? ` (the first ${LIST_LIMIT})` : '';
    console.log(`${dead.length} dead notification deliver${dead.length === 1 ? 'y' : 'ies'}${more}`);
    return 0;
  }
  const requeued = await requeueDead(db, { ids: args.ids, channel: args.channel });
  for (const r of requeued) console.log(`ntf_${r.id}  ${r.channel}  requeued`);
  const missing = (args.ids ?? []).filter((id) => !requeued.some((r) => r.id === id));
  for (const id of missing)
    console.error(`support: ntf_${id}: no dead delivery${args.channel ? ` on ${args.channel}` : ''}`);
  if (requeued.length === 0 && !args.ids) {
    console.log(`no dead notifications to requeue${args.channel ? ` on ${args.channel}` : ''}`);
    return 0;
  }
  if (requeued.length === 0) {
    console.error('support: nothing requeued');
    return 1;
  }
  console.log(
    `${requeued.length} delivery(ies) requeued: the workers hand them to Temporal within ${NOTIFICATION_HAND_OVER_MS / 1000} s`,
  );
  return missing.length ? 1 : 0;
}
