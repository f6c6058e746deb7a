// `npm run sagas -- stuck [--older-than 5m] [--json] [--fail-on-any]`: lists stuck purchase and
// refund sagas, and money waiting for support (needs_attention), with the reason and a Temporal UI
// link each, and prints the Temporal UI filters that find them. Read-only. Exit 0 (also when
// something is stuck, unless --fail-on-any: then 1), 2 on bad arguments or when Temporal or
// Postgres cannot be reached, so an alert fires on 1 and pages about the check itself on 2.
import { openCliClients, runCli, unknownSku } from './cli';
import { parse, USAGE, type SagasArgs } from './sagas-args';
import type { TemporalUi } from './temporal-ui';
import { scanStuckSagas, type StuckSaga, type StuckScan } from './stuck-sagas';
import { formatDuration } from './temporal-describe';

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  // The last column (the reason) is not padded: it is long and free text.
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n');
}

function render(scan: StuckScan, args: SagasArgs, now: Date, ui: TemporalUi): string {
  const lines: string[] = [];
  if (scan.stuck.length === 0) {
    lines.push(
      `no stuck sagas (threshold ${formatDuration(args.olderThanMs)}, ${scan.scanned} running saga(s) examined)`,
    );
  } else {
    lines.push(
      `${scan.stuck.length} stuck saga(s) (threshold ${formatDuration(args.olderThanMs)}, at ${now.toISOString()}):`,
      '',
    );
    const header = ['WORKFLOW', 'STATUS', 'SKU', 'BUYER', 'HOLD EXPIRES', 'REASON'];
    const rows = scan.stuck.map((s: StuckSaga) => [
      s.workflowId,
      s.status ?? '-',
      s.sku ?? '-',
      s.buyerId ?? '-',
      s.holdExpiresAt ?? '-',
      s.reason,
    ]);
    // Each row is followed by its saga's page in the Temporal UI (history, pending activities).
    const [head, ...body] = table([header, ...rows]).split('\n');
    lines.push(head);
    scan.stuck.forEach((s, i) => lines.push(body[i], `  ${ui.workflow(s.workflowId, s.runId)}`));
    if (scan.stuck.some((s) => s.kinds.includes('needs_attention') || s.kinds.includes('stray_payment'))) {
      lines.push(
        '',
        'needs_attention: money waits for support (docs/runbook.md, "Needs attention"):',
        '  npm run support -- retry <purchaseId>          try the refused step again now',
        '  npm run support -- settle <purchaseId> --note  it was settled by hand (say, refunded by bank transfer)',
        '  npm run support -- retry-stray|settle-stray <sessionId>   the same for a stray payment',
      );
    }
  }
  if (scan.stuck.some((s) => s.pendingActivity?.activityType === 'expireCheckout')) {
    lines.push(
      '',
      'expireCheckout failing: Stripe keeps failing to expire the session (docs/runbook.md, "A Stripe step that keeps failing"):',
      '  it ends by itself once Stripe says the session expired (at its expires_at, or expired by hand: stripe checkout sessions expire cs_...)',
      '  npm run support -- settle <purchaseId> --note  when Stripe will not: the saga counts the session closed, the unit goes back on sale',
    );
  }
  if (scan.truncated)
    lines.push('', `warning: a query returned more than --limit ${args.limit} workflows; raise it to see all`);
  lines.push(
    '',
    'Temporal UI filters (Workflows, search box):',
    `  hold lapsed, not settled:  ${scan.filters.holdLapsed}`,
    `                             ${ui.list(scan.filters.holdLapsed)}`,
    `  stuck taking the hold:     ${scan.filters.stuckHolding}`,
    `                             ${ui.list(scan.filters.stuckHolding)}`,
    `  needs attention (support): ${scan.filters.needsAttention}`,
    `                             ${ui.list(scan.filters.needsAttention)}`,
    `  running sagas (open one, see Pending Activities for attempts and last failure):`,
    `                             ${scan.filters.running}`,
    `                             ${ui.list(scan.filters.running)}`,
  );
  return lines.join('\n');
}

async function main(args: SagasArgs): Promise<number> {
  const clients = await openCliClients('sagas', { db: 'optional', temporal: true });
  const { db, namespace, ui } = clients;
  try {
    // Without DATABASE_URL the SKU is only a filter: Temporal cannot say whether it names a product.
    if (db && (await unknownSku('sagas', db, args.sku, USAGE))) return 2;
    const now = new Date();
    const scan = await scanStuckSagas(clients.temporal!, {
      olderThanMs: args.olderThanMs,
      now,
      limit: args.limit,
      sku: args.sku,
      taskQueue: args.taskQueue,
      db,
    });
    if (args.json) {
      console.log(
        JSON.stringify(
          {
            at: now.toISOString(),
            olderThanMs: args.olderThanMs,
            namespace,
            stuck: scan.stuck.map((s) => ({ ...s, url: ui.workflow(s.workflowId, s.runId) })),
            scanned: scan.scanned,
            truncated: scan.truncated,
            filters: scan.filters,
            filterUrls: Object.fromEntries(
              Object.entries<string>({ ...scan.filters }).map(([k, q]) => [k, ui.list(q)]),
            ),
          },
          null,
          2,
        ),
      );
    } else {
      console.log(render(scan, args, now, ui));
    }
    return args.failOnAny && scan.stuck.length > 0 ? 1 : 0;
  } finally {
    await clients.close();
  }
}

// A Temporal or Postgres that cannot be reached is exit 2: with --fail-on-any, 1 means "found some".
runCli('sagas', USAGE, parse, main, 2);
