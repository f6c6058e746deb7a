// The service's own Prometheus metrics, one catalogue: the API's and the worker's registries declare
// each from its entry here (name, type, labels, help), `npm run docs` writes the table of
// docs/observability.md from it, and the monitoring tests check the alert rules and the dashboard
// against it. Node's process metrics (`process_*`, `nodejs_*`) and the Temporal SDK's (`temporal_*`)
// keep their stock names and are not listed.

export type MetricType = 'counter' | 'gauge' | 'histogram';

export interface Metric {
  type: MetricType;
  /** The process whose /metrics exports it. */
  exportedBy: 'api' | 'worker';
  labels: readonly string[];
  /** The HELP line. */
  help: string;
  /** What the operations table adds: label values, how to aggregate it over processes. */
  note?: string;
}

const SAME_ON_EVERY = 'the same on every process (from Postgres): aggregate with `max`, not `sum`';

export const METRICS = {
  flashsale_gate_answers_total: {
    type: 'counter',
    exportedBy: 'api',
    labels: ['outcome'],
    help: 'POST /v1/purchases admissions by gate outcome',
    note: '`outcome`: `permit`, `sold_out_final`, `sold_out_retry`, `known_key`, `hold_exists`, …',
  },
  flashsale_sagas_started_total: {
    type: 'counter',
    exportedBy: 'api',
    labels: [],
    help: 'Purchase sagas started by this API process',
  },
  flashsale_holds_refused_total: {
    type: 'counter',
    exportedBy: 'api',
    labels: ['rejection'],
    help: 'New sagas whose hold step refused',
  },
  flashsale_sessions_opened_total: {
    type: 'counter',
    exportedBy: 'worker',
    labels: [],
    help: 'Checkout Sessions opened for purchases, counted when they open (buyers answered 201 and 202 alike)',
    note: 'one per purchase (a retried step is not counted twice); sum it over workers',
  },
  flashsale_payment_events_total: {
    type: 'counter',
    exportedBy: 'api',
    labels: ['type'],
    help: 'Stripe events handed to sagas, by type',
    note: '`type`: the Stripe event type (`checkout.session.completed`, …)',
  },
  flashsale_payments_received_total: {
    type: 'counter',
    exportedBy: 'api',
    labels: [],
    help: 'Payments handed to sagas: sessions paid at once and delayed payments that succeeded',
    note: 'a completed session whose bank debit is still pending counts when it succeeds',
  },
  flashsale_webhook_events_total: {
    type: 'counter',
    exportedBy: 'api',
    labels: ['result'],
    help: 'Stripe webhook deliveries by result',
    note: '`result`: `delivered`, `duplicate`, `recorded`, `ignored`, `rejected`, `conflict`, `bad_signature`, `error`',
  },
  flashsale_purchase_checkout_seconds: {
    type: 'histogram',
    exportedBy: 'worker',
    labels: [],
    help: 'Time from a purchase placed to its Checkout Session open, the wait in the checkout line included',
    note: 'observed when the session opens, whatever the buyer was answered (201, or 202 and a wait in the line)',
  },
  flashsale_gate_remaining_units: {
    type: 'gauge',
    exportedBy: 'api',
    labels: ['sku'],
    help: 'Units the gate believes can still be had',
  },
  flashsale_gate_held_units: {
    type: 'gauge',
    exportedBy: 'api',
    labels: ['sku'],
    help: 'Units in active holds, as the gate last read them',
  },
  flashsale_gate_in_flight_units: {
    type: 'gauge',
    exportedBy: 'api',
    labels: ['sku'],
    help: 'Units under permits whose hold is not yet in the view',
  },
  flashsale_http_request_duration_seconds: {
    type: 'histogram',
    exportedBy: 'api',
    labels: ['method', 'route', 'status'],
    help: 'HTTP requests by route template, method and status: time to the answer',
    note: '`route`: the template (`/v1/purchases/:id`), `unmatched` for no route',
  },
  flashsale_purchases: {
    type: 'gauge',
    exportedBy: 'api',
    labels: ['status'],
    help: 'Purchases by current status (from the purchase records, counted in the background at most every 15 s)',
    note: `one \`GROUP BY\` at most every 15 s per API process, shared by every scrape; ${SAME_ON_EVERY}`,
  },
  flashsale_purchases_counted_at_seconds: {
    type: 'gauge',
    exportedBy: 'api',
    labels: [],
    help: 'When flashsale_purchases was last counted (Unix time): how stale it is',
  },
  flashsale_disputes: {
    type: 'gauge',
    exportedBy: 'api',
    labels: ['status'],
    help: "Disputed payments (chargebacks) by Stripe's dispute status, from the purchase records (counted with flashsale_purchases)",
    note: `\`status\`: Stripe's (\`needs_response\`, \`under_review\`, \`won\`, \`lost\`, …); ${SAME_ON_EVERY}`,
  },
  flashsale_dispute_response_due_timestamp_seconds: {
    type: 'gauge',
    exportedBy: 'api',
    labels: [],
    help: 'The earliest response deadline of the disputes waiting for evidence (Unix time); 0 when none waits',
    note: `minus \`time()\`: how long is left to answer the most urgent dispute; ${SAME_ON_EVERY}`,
  },
  flashsale_room_waiting: {
    type: 'gauge',
    exportedBy: 'api',
    labels: ['sku'],
    help: 'Waiting-room tickets not admitted yet',
    note: SAME_ON_EVERY,
  },
  flashsale_room_admitted: {
    type: 'gauge',
    exportedBy: 'api',
    labels: ['sku'],
    help: 'Waiting-room tickets admitted so far',
    note: SAME_ON_EVERY,
  },
  flashsale_room_active: {
    type: 'gauge',
    exportedBy: 'api',
    labels: ['sku'],
    help: 'Admitted buyers inside now (not bought, not expired)',
    note: SAME_ON_EVERY,
  },
  flashsale_room_state: {
    type: 'gauge',
    exportedBy: 'api',
    labels: ['sku', 'state'],
    help: 'Waiting-room state: 1 for the state the room is in',
    note: '`state`: `open`, `paused`, `closed` or `sold_out`',
  },
  flashsale_room_admitter: {
    type: 'gauge',
    exportedBy: 'api',
    labels: [],
    help: "1 while this API process is the waiting rooms' admitter (one process of all holds the lock)",
    note: 'the sum over processes is 1',
  },
  flashsale_checkout_line_waiting: {
    type: 'gauge',
    exportedBy: 'api',
    labels: [],
    help: 'Purchases waiting in the line for their Checkout Session (the Stripe budget lets them in at its pace; a purchase counts until its hold has passed since its slot)',
    note: SAME_ON_EVERY,
  },
  flashsale_checkout_line_seconds: {
    type: 'gauge',
    exportedBy: 'api',
    labels: [],
    help: 'Seconds until the last checkout slot handed out: about how long a purchase placed now waits for its session',
    note: SAME_ON_EVERY,
  },
  flashsale_checkout_line_oldest_slot_seconds: {
    type: 'gauge',
    exportedBy: 'api',
    labels: [],
    help: 'Seconds since the slot of the oldest purchase still waiting in the line came (0: none overdue)',
    note: `a purchase counts in the line until its product's hold has passed since its slot; ${SAME_ON_EVERY}`,
  },
  flashsale_checkout_line_shortest_hold_seconds: {
    type: 'gauge',
    exportedBy: 'api',
    labels: [],
    help: 'The shortest hold of the products with purchases in the line (0 while the line is empty)',
    note: `a line longer than this lets holds lapse before their sessions open; ${SAME_ON_EVERY}`,
  },
  flashsale_sweeper_returned_holds_total: {
    type: 'counter',
    exportedBy: 'worker',
    labels: [],
    help: 'Lapsed holds the sweeper returned to stock',
  },
  flashsale_stripe_requests_total: {
    type: 'counter',
    exportedBy: 'worker',
    labels: ['endpoint', 'outcome'],
    help: 'Calls to Stripe by endpoint and outcome (rate_limited: answered 429)',
    note: '`endpoint`: `STRIPE_ENDPOINTS` in `vocabulary/`; `outcome`: `ok`, `rate_limited` (429), `refused` (another 4xx), `failed` (5xx, no answer); sum it over workers',
  },
  flashsale_stripe_budget_requests_per_second: {
    type: 'gauge',
    exportedBy: 'worker',
    labels: [],
    help: "The deployment's Stripe budget (STRIPE_MAX_REQUESTS_PER_SECOND), the Stripe task queue's rate limit",
    note: 'the same on every worker: aggregate with `max`',
  },
  flashsale_stray_refunds_refused_total: {
    type: 'counter',
    exportedBy: 'worker',
    labels: [],
    help: 'Stray-payment refunds refused because Stripe or our records showed the money is not stray (no money moved)',
  },
  flashsale_notifications: {
    type: 'gauge',
    exportedBy: 'worker',
    labels: ['channel', 'state'],
    help: 'Buyer notification deliveries not sent, by channel and state (pending, dead)',
    note: SAME_ON_EVERY,
  },
  flashsale_notification_deliveries_total: {
    type: 'counter',
    exportedBy: 'worker',
    labels: ['channel', 'outcome'],
    help: "This worker's buyer notification delivery attempts, by channel and outcome (delivered, skipped, failed: retried, dead)",
  },
} as const satisfies Record<string, Metric>;

export type MetricName = keyof typeof METRICS;

/** What prom-client takes to declare a metric of the catalogue: its name, HELP and label names. */
export function metricOptions<N extends MetricName>(
  name: N,
): { name: N; help: string; labelNames: (typeof METRICS)[N]['labels'] } {
  const m = METRICS[name];
  return { name, help: m.help, labelNames: m.labels };
}
