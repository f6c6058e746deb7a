// What the chaos test reads once the run is over: Stripe's view (the emulator's sessions, refunds,
// events and faults), the purchase records, the workflow executions; the money checks over them;
// and the counts it prints.
import { createStripe } from '../../config/clients';
import { purchaseWorkflowId } from '../../vocabulary';
import type { BuyerResult } from './chaos-buyers';
import type { ChaosStack } from './chaos-stack';

export const OPEN_STATUSES = ['holding', 'awaiting_payment'];
const PAID_OUTCOMES = ['confirmed', 'late_confirmed', 'refunded'];

export interface Outcome {
  paidSessions: { sessionId: string; purchaseId: string; paymentIntentId?: string }[];
  refundsByPi: Map<string, number>;
  purchases: Map<string, { status: string; reason: string | null }>;
  events: {
    type: string;
    object_id: string;
    deliveries: { state: string; attempts: { at: string; status: number | null }[] }[];
  }[];
  faults: { status: number; hits: number; seen: number; saved: boolean }[];
  /** Workflow executions by status name (RUNNING, COMPLETED, FAILED, …). */
  executions: Record<string, number>;
  running: string[];
  sold: number;
}

async function control(stack: ChaosStack, method: string, path: string): Promise<any> {
  return (await fetch(`${stack.emulator.url}${path}`, { method })).json();
}

/** Reads everything once; clears the Stripe faults first (they would fail these reads too). */
export async function readOutcome(stack: ChaosStack, sku: string): Promise<Outcome> {
  const faults = (await control(stack, 'GET', '/_emulator/faults')).data;
  await control(stack, 'DELETE', '/_emulator/faults');
  const stripe = createStripe({ stripeSecretKey: 'sk_test_emulator', stripeApiUrl: stack.emulator.url });
  const paidSessions: Outcome['paidSessions'] = [];
  for await (const s of stripe.checkout.sessions.list({ limit: 100 })) {
    if (s.metadata?.sku !== sku || s.payment_status !== 'paid') continue;
    const pi = typeof s.payment_intent === 'string' ? s.payment_intent : s.payment_intent?.id;
    paidSessions.push({ sessionId: s.id, purchaseId: s.metadata.purchase_id, paymentIntentId: pi });
  }
  const refundsByPi = new Map<string, number>();
  for await (const r of stripe.refunds.list({ limit: 100 })) {
    const pi = typeof r.payment_intent === 'string' ? r.payment_intent : r.payment_intent?.id;
    if (pi && r.status !== 'failed') refundsByPi.set(pi, (refundsByPi.get(pi) ?? 0) + 1);
  }
  const { rows } = await stack.db.query<{ purchase_id: string; status: string; reason: string | null }>(
    'SELECT purchase_id, status, reason FROM purchases WHERE sku = $1',
    [sku],
  );
  const { rows: sold } = await stack.db.query<{ n: number }>(
    "SELECT coalesce(sum(quantity), 0)::int AS n FROM holds WHERE sku = $1 AND status = 'sold'",
    [sku],
  );
  const executions: Record<string, number> = {};
  const running: string[] = [];
  for await (const w of stack.temporal.workflow.list()) {
    executions[w.status.name] = (executions[w.status.name] ?? 0) + 1;
    if (w.status.name === 'RUNNING') running.push(w.workflowId.replace(/^purchase-/, ''));
  }
  return {
    paidSessions,
    refundsByPi,
    purchases: new Map(rows.map((p) => [p.purchase_id, p])),
    events: (await control(stack, 'GET', '/_emulator/events')).data,
    faults,
    executions,
    running,
    sold: sold[0].n,
  };
}

/** The money rules, one line per purchase that breaks one. */
export function moneyDefects(o: Outcome): { purchaseId: string; why: string }[] {
  const defects: { purchaseId: string; why: string }[] = [];
  const paidIds = new Set<string>();
  for (const s of o.paidSessions) {
    paidIds.add(s.purchaseId);
    const p = o.purchases.get(s.purchaseId);
    const refunds = s.paymentIntentId ? (o.refundsByPi.get(s.paymentIntentId) ?? 0) : 0;
    if (!p || !PAID_OUTCOMES.includes(p.status)) {
      defects.push({ purchaseId: s.purchaseId, why: `paid session ${s.sessionId} ended ${p?.status ?? 'unknown'}` });
    } else if ((p.status === 'refunded' ? 1 : 0) !== refunds) {
      defects.push({ purchaseId: s.purchaseId, why: `paid, ended ${p.status}, with ${refunds} refund(s)` });
    }
  }
  for (const [id, p] of o.purchases) {
    if (PAID_OUTCOMES.includes(p.status) && !paidIds.has(id)) {
      defects.push({ purchaseId: id, why: `${p.status} without a paid session` });
    }
    // A hold that lapsed while the worker was down ends `failed` before any checkout opened (the buyer
    // was answered 503 and tries again): compensated, no money. Any other failure is a defect.
    const lapsedBeforeCheckout = /the hold lapsed before the Checkout Session could open/.test(p.reason ?? '');
    if (p.status === 'failed' && !(lapsedBeforeCheckout && !paidIds.has(id))) {
      defects.push({ purchaseId: id, why: `failed: ${p.reason}` });
    }
    if (OPEN_STATUSES.includes(p.status)) defects.push({ purchaseId: id, why: `still ${p.status}: ${p.reason}` });
  }
  return defects;
}

/** A payment event signal as `paymentEvent type/payment status`. */
function signalOf(attrs: any): string | undefined {
  if (!attrs?.signalName) return undefined;
  try {
    const e = JSON.parse(Buffer.from(attrs.input.payloads[0].data).toString('utf8'));
    return `${attrs.signalName} ${e.type}${e.paymentStatus ? `/${e.paymentStatus}` : ''}`;
  } catch {
    return attrs.signalName;
  }
}

/** A protobuf Duration as `12.5s`. */
function seconds(d: { seconds?: unknown; nanos?: number } | null | undefined): string | undefined {
  if (!d) return undefined;
  return `${Number(d.seconds ?? 0) + (d.nanos ?? 0) / 1e9}s`;
}

/** Each run of a purchase's workflow as its steps (workflow tasks left out), for a defect report. */
export async function sagaSteps(stack: ChaosStack, purchaseId: string): Promise<string> {
  const lines: string[] = [];
  try {
    const query = `WorkflowId="${purchaseWorkflowId(purchaseId)}"`;
    for await (const run of stack.temporal.workflow.list({ query })) {
      const history = await stack.temporal.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
      const steps = (history.events ?? []).flatMap((e) => {
        const key = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as any)[k]);
        const attrs = key ? (e as any)[key] : undefined;
        const name = key?.replace(/EventAttributes$/, '') ?? '?';
        if (name.startsWith('workflowTask') && !attrs?.failure) return [];
        const detail =
          attrs?.activityType?.name ??
          signalOf(attrs) ??
          attrs?.failure?.message ??
          seconds(attrs?.startToFireTimeout) ??
          '';
        return [detail ? `${name}(${detail})` : name];
      });
      lines.push(`    run ${run.runId} ${run.status.name} from ${run.startTime.toISOString()}: ${steps.join(' > ')}`);
    }
  } catch (err) {
    lines.push(`    no history: ${(err as Error).message}`);
  }
  return lines.join('\n');
}

export interface Tally {
  seed: number;
  stock: number;
  buyers: BuyerResult[];
  chaos: { what: string; at: number; tookMs: number }[];
  /** When the first buyer could arrive (the chaos times count from it). */
  t0: number;
  elapsedMs: number;
  totalMs: number;
}

/** When the service first accepted (2xx) the webhook saying this session was completed. */
export function completionAcceptedAt(o: Outcome, sessionId: string): number | undefined {
  const times = o.events
    .filter((e) => e.object_id === sessionId && e.type === 'checkout.session.completed')
    .flatMap((e) => e.deliveries.flatMap((d) => d.attempts))
    .filter((a) => a.status !== null && a.status < 300)
    .map((a) => Date.parse(a.at));
  return times.length ? Math.min(...times) : undefined;
}

/** The printed counts. Also returns the buyers that paid before the hold lapsed and were not confirmed. */
export function countLines(
  o: Outcome,
  tally: Tally,
): { lines: string[]; paidInTimeNotConfirmed: BuyerResult[]; duringOutage: (b: BuyerResult) => boolean } {
  const count = <T>(items: T[], pred: (x: T) => boolean) => items.filter(pred).length;
  const sum = <T>(items: T[], f: (x: T) => number) => items.reduce((n, x) => n + f(x), 0);
  const statusOf = (b: BuyerResult) => o.purchases.get(b.purchaseId!)?.status ?? 'unknown';
  const tallyOf = (rs: BuyerResult[], key: (b: BuyerResult) => string = statusOf) => {
    const out: Record<string, number> = {};
    for (const r of rs) out[key(r)] = (out[key(r)] ?? 0) + 1;
    return JSON.stringify(out);
  };
  const { buyers } = tally;
  const winners = buyers.filter((b) => b.purchaseId);
  const paid = winners.filter((b) => b.paid);
  const inTime = paid.filter((b) => b.paidAt! < b.holdEnd!);
  const afterLapse = paid.filter((b) => b.paidAt! >= b.holdEnd!);
  const gaveUp = winners.filter((b) => b.behaviour === 'decline' && !b.paid);
  const abandoned = winners.filter((b) => b.behaviour === 'abandon');
  const lostInTime = inTime.filter((b) => statusOf(b) !== 'confirmed');
  // Was anything down between the payment and a moment after the lapse (the sweeper's interval)?
  const outages = tally.chaos.map((c) => [tally.t0 + c.at, tally.t0 + c.at + c.tookMs]);
  const duringOutage = (b: BuyerResult) => outages.some(([from, to]) => from <= b.holdEnd! + 1000 && to >= b.paidAt!);
  const deliveries = o.events.flatMap((e) => e.deliveries);
  const faultHits = sum(o.faults, (f) => f.hits);
  const calls = o.faults[0]?.seen ?? 0;
  const byStatus = tallyOf([...o.purchases.keys()].map((purchaseId) => ({ purchaseId }) as BuyerResult));
  const lines = [
    `chaos run, seed ${tally.seed}: ${(tally.elapsedMs / 1000).toFixed(1)} s from the first buyer to the last saga, ${(tally.totalMs / 1000).toFixed(1)} s with the stack`,
    `buyers ${buyers.length} for ${tally.stock} units: ${winners.length} got a checkout (${sum(buyers, (b) => b.posts)} POSTs); the others: ${tallyOf(
      buyers.filter((b) => !b.purchaseId),
      (b) => (b.lost ?? '?').replace(/:.*/, ''),
    )}`,
    `winners by behaviour: ${tallyOf(winners, (b) => b.behaviour)}`,
    `paid in time ${inTime.length} ${tallyOf(inTime, (b) => b.paid!)} -> ${tallyOf(inTime)}`,
    `paid after the hold lapsed ${afterLapse.length} ${tallyOf(afterLapse, (b) => b.paid!)} -> ${tallyOf(afterLapse)}`,
    `declined and gave up ${gaveUp.length} (${sum(winners, (b) => b.declines)} declines in all) -> ${tallyOf(gaveUp)}`,
    `abandoned ${abandoned.length} -> ${tallyOf(abandoned)}; pays the emulator refused (session closed) ${sum(winners, (b) => b.refusedPays)}`,
    `purchases by status ${byStatus}; sold ${o.sold} of ${tally.stock}; paid sessions ${o.paidSessions.length}; refunds ${sum([...o.refundsByPi.values()], (n) => n)}`,
    `chaos: ${tally.chaos.map((c) => `${c.what} at ${(c.at / 1000).toFixed(1)} s (${(c.tookMs / 1000).toFixed(1)} s)`).join('; ')}`,
    `Stripe faults served ${faultHits} of ${calls} calls (${((100 * faultHits) / Math.max(1, calls)).toFixed(1)} %): ${o.faults.map((f) => `${f.status}${f.saved ? ' kept' : ''} x${f.hits}`).join(', ')}`,
    `webhooks: ${o.events.length} events, ${deliveries.length} deliveries (3 per event, shuffled), ${sum(deliveries, (d) => d.attempts.length)} attempts, ${count(deliveries, (d) => d.state === 'failed')} given up, ${count(deliveries, (d) => d.state !== 'delivered' && d.state !== 'failed')} unfinished`,
    `workflow executions ${JSON.stringify(o.executions)}`,
    `checkouts answered after their hold had lapsed ${count(winners, (b) => b.answeredAt! >= b.holdEnd!)}; paid in time but not confirmed ${lostInTime.length} (${count(lostInTime, duringOutage)} with an outage between the payment and the lapse) -> ${tallyOf(lostInTime)}`,
  ];
  return { lines, paidInTimeNotConfirmed: lostInTime, duringOutage };
}
