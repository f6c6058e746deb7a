// The command line of `npm run sagas` (ops/sagas.ts runs it): its usage and its parsing, apart
// from the CLI's clients so the fast tier tests them.
import { parseCommandLine, UsageError } from './cli-args';
import { parseDuration } from './temporal-describe';

/** Ten years: a longer look back is no date at all. */
const MAX_OLDER_THAN_MS = 3650 * 86_400_000;

export const USAGE = `usage: npm run sagas -- stuck [--older-than 5m] [--json] [--fail-on-any] [--limit N] [--sku SKU] [--task-queue QUEUE]

Lists purchase and refund sagas that should have moved on and did not:
  - holding or awaiting payment, with the hold expired more than --older-than ago
  - still taking the hold more than --older-than after starting (with the database: after its
    slot in the line for Checkout Sessions)
  - an activity failing repeatedly (attempt 3 or later), with its last failure
  - a workflow task failing, or waiting for a worker
  - needs_attention, whatever its age: Stripe refused a step that settles the money (or a refund
    failed); the saga retries with backoff and waits for support (npm run support -- retry|settle)
  - with DATABASE_URL: a purchase record left holding/awaiting payment with no saga running, and
    purchases and stray payments in needs_attention, with Stripe's message

  --older-than  how long past the hold expiry or the start counts as stuck (ms, s, m, h, d; default 5m;
                needs_attention is listed whatever its age)
  --json        one JSON document instead of the table
  --fail-on-any exit 1 when anything is reported (for a cron job or an alert; default: exit 0)
  --limit       at most this many workflows per query (default 1000)
  --sku         only this SKU (with DATABASE_URL, one that names no product is exit 2);  --task-queue  only this task queue

Exit 0 done (with --fail-on-any: nothing stuck), 1 with --fail-on-any when something is stuck,
2 on bad arguments or when Temporal (or Postgres, when given) cannot be reached.

Environment: TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE (default default),
DATABASE_URL (optional), TEMPORAL_UI_URL (default http://127.0.0.1:8233; the links printed).`;

export interface SagasArgs {
  olderThanMs: number;
  json: boolean;
  failOnAny: boolean;
  limit: number;
  sku?: string;
  taskQueue?: string;
}

export function parse(argv: string[]): SagasArgs | 'help' {
  const { values, positionals } = parseCommandLine(argv, {
    'older-than': { type: 'string', default: '5m' },
    json: { type: 'boolean', default: false },
    'fail-on-any': { type: 'boolean', default: false },
    limit: { type: 'string', default: '1000' },
    sku: { type: 'string' },
    'task-queue': { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) return 'help';
  if (positionals.length !== 1 || positionals[0] !== 'stuck') {
    throw new UsageError(positionals.length ? `unknown command: ${positionals.join(' ')}` : 'missing command: stuck');
  }
  const olderThanMs = parseDuration(values['older-than']);
  if (olderThanMs === undefined)
    throw new UsageError(`--older-than: not a duration: ${values['older-than']} (try 30s, 5m, 2h)`);
  if (olderThanMs > MAX_OLDER_THAN_MS) throw new UsageError(`--older-than: at most 3650d, got ${values['older-than']}`);
  const limit = Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`--limit: not a positive integer: ${values.limit}`);
  for (const [name, value] of [
    ['--sku', values.sku],
    ['--task-queue', values['task-queue']],
  ] as const) {
    if (value !== undefined && (value === '' || /["\\\n]/.test(value)))
      throw new UsageError(`${name}: not a usable value: ${value}`);
  }
  return {
    olderThanMs,
    json: values.json,
    failOnAny: values['fail-on-any'],
    limit,
    sku: values.sku,
    taskQueue: values['task-queue'],
  };
}
