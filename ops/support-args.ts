// The command line of `npm run support` (ops/support.ts runs it): its usage, and the parsing that
// turns argv into what to do. Imports nothing that connects to anything, so the fast tier tests it.
import { sanitiseText } from '../vocabulary/text';
import type { PurchaseLookup } from '../store/purchases';
import type { SupportVerb } from './attention';
import { parseCommandLine, UsageError } from './cli-args';
import { parseNotifications, type NotificationsArgs } from './notifications-args';

export const USAGE = `usage: npm run support -- find --buyer <buyerId> | --session <cs_...> | --payment-intent <pi_...> [--json]
       npm run support -- refund <purchaseId> --reason "why" [--restock] [--note "internal"]
       npm run support -- refund-oversold <sku> --reason "why" [--note "internal"]
       npm run support -- retry <purchaseId>
       npm run support -- settle <purchaseId> --note "refunded by bank transfer"
       npm run support -- retry-stray <sessionId>
       npm run support -- settle-stray <sessionId> --note "what was done"
       npm run support -- list-attention [--sku SKU]
       npm run support -- disputes [--all] [--sku SKU]
       npm run support -- notifications list [--channel webhook|email|log] [--json]
       npm run support -- notifications retry <ntf_id>... | --all [--channel webhook|email|log]

find: the purchases of a buyer, or the one a Checkout Session or PaymentIntent paid (as the buyer's
bank statement or the Stripe Dashboard names it), newest first, each with its Temporal UI link.
Exit 1 when none is found.
refund: refunds a confirmed purchase in full (Stripe refund keyed by the purchase id) and, with
--restock, puts the unit back on sale. Running it again for the same purchase does not refund twice.
--reason is the buyer's message: it is sent to the buyer word for word. --note is for support only:
it goes to the audit trail, never to the buyer or to Stripe.
refund-oversold: refunds every order of <sku> flagged as sold beyond stock (oversell allowance),
returning those units to the allowance. Safe to run again.

For money in needs_attention (Stripe refused a step that settles it, or a refund failed; its saga
retries with backoff and waits for support), see also npm run sagas -- stuck:
retry: tells the purchase's waiting saga(s) to try the refused step now, and reports the outcome.
settle: the step was settled by hand (say, refunded by bank transfer): the saga stops trying and
records the note (required) as the refund's reason. The purchase ends refunded. Also for a purchase
whose saga keeps failing to expire its Checkout Session (Stripe 5xx: npm run sagas -- stuck names
it): the saga stops calling, counts the session as closed, and the unit goes back on sale.
A refund that failed after its saga ended gets a new saga (refund-<purchaseId>) from retry, settle or
refund: retry and refund make it again (once per failed refund), settle records the note.
retry-stray, settle-stray: the same for the refund of a stray payment (money paid on a Checkout
Session that named one of our purchases without being its own), by its session id.
list-attention: purchases and stray payments in needs_attention, with Stripe's message.

disputes: the purchases whose payment the buyer's bank disputes (chargebacks) and that wait for the
bank, the most urgent response deadline first, with the Stripe Dashboard's dispute id; --all adds the
closed ones (won, lost). A payment is not refunded while its dispute is open; a lost dispute settles
a refund still owed (docs/runbook.md, "Disputes").

Buyer notifications the worker gave up on (dead: the merchant's webhook answered a 4xx other than
408/429, the SMTP server refused for good, a malformed address, or NOTIFY_MAX_ATTEMPTS or
NOTIFY_MAX_AGE_MS reached), per channel:
notifications list: the dead ones with their attempts and last error (exit 0, also when none).
notifications retry: puts the named ones (or --all) back in the queue with a fresh attempt count;
the sender tries them at once. Exit 1 when one named has no dead delivery.

Exit 0 done, 1 not found or not applicable (no such purchase, not needs_attention, no saga running
to hear it, or Stripe refused again), 2 usage or configuration errors.

Environment: DATABASE_URL (required), TEMPORAL_ADDRESS (default 127.0.0.1:7233),
TEMPORAL_NAMESPACE (default default), TASK_QUEUE (default purchases), TEMPORAL_UI_URL (default
http://127.0.0.1:8233; the links printed).`;

const MAX_TEXT = 500;

export type SupportArgs =
  | { command: 'refund'; purchaseId: string; reason: string; restock: boolean; note?: string }
  | { command: 'refund-oversold'; sku: string; reason: string; note?: string }
  /** retry, settle (a purchase) and retry-stray, settle-stray (a stray payment's session). */
  | { command: 'attend'; on: 'purchase' | 'stray'; target: string; verb: SupportVerb }
  | { command: 'list-attention'; sku?: string }
  | { command: 'disputes'; all: boolean; sku?: string }
  | { command: 'find'; by: PurchaseLookup; json: boolean }
  | NotificationsArgs;

const COMMANDS = [
  'find',
  'refund',
  'refund-oversold',
  'retry',
  'settle',
  'retry-stray',
  'settle-stray',
  'list-attention',
  'disputes',
  'notifications',
];

/** A required free-text option (it goes to the buyer or the audit trail), cleaned as the API cleans it. */
function text(name: string, value: string | undefined, why: string): string {
  const trimmed = value === undefined ? undefined : sanitiseText(value);
  if (!trimmed) throw new UsageError(`--${name} is required (${why})`);
  if (trimmed.length > MAX_TEXT) throw new UsageError(`--${name} must be at most ${MAX_TEXT} characters`);
  return trimmed;
}

export function parse(argv: string[]): SupportArgs | 'help' {
  const { values, positionals } = parseCommandLine(argv, {
    reason: { type: 'string' },
    note: { type: 'string' },
    restock: { type: 'boolean', default: false },
    sku: { type: 'string' },
    buyer: { type: 'string' },
    session: { type: 'string' },
    'payment-intent': { type: 'string' },
    json: { type: 'boolean', default: false },
    channel: { type: 'string' },
    all: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) return 'help';
  const [command, target, ...extra] = positionals;
  if (!command || !COMMANDS.includes(command)) {
    throw new UsageError(command ? `unknown command: ${command}` : `missing command: one of ${COMMANDS.join(', ')}`);
  }
  const lookups = (['buyer', 'session', 'payment-intent'] as const).filter((k) => values[k] !== undefined);
  if (command === 'notifications') {
    for (const name of ['reason', 'note', 'sku', ...lookups] as const) {
      if (values[name] !== undefined) throw new UsageError(`--${name} does not apply to notifications`);
    }
    if (values.restock) throw new UsageError('--restock does not apply to notifications');
    return parseNotifications(positionals.slice(1), values);
  }
  if (command === 'disputes') {
    if (target !== undefined) throw new UsageError(`unexpected arguments: ${positionals.slice(1).join(' ')}`);
    for (const name of ['reason', 'note', 'channel', ...lookups] as const) {
      if (values[name] !== undefined) throw new UsageError(`--${name} does not apply to disputes`);
    }
    if (values.restock || values.json) throw new UsageError('--restock and --json do not apply to disputes');
    return { command, all: values.all, sku: values.sku?.trim() || undefined };
  }
  if (values.channel !== undefined || values.all)
    throw new UsageError('--channel only applies to notifications, --all to notifications and disputes');
  if (command === 'find') {
    if (target !== undefined) throw new UsageError(`unexpected arguments: ${positionals.slice(1).join(' ')}`);
    if (lookups.length !== 1) throw new UsageError('find: give exactly one of --buyer, --session, --payment-intent');
    const value = values[lookups[0]]!.trim();
    if (!value || value.length > 256) throw new UsageError(`--${lookups[0]}: must be 1 to 256 characters`);
    const by: PurchaseLookup =
      lookups[0] === 'buyer'
        ? { buyerId: value }
        : lookups[0] === 'session'
          ? { sessionId: value }
          : { paymentIntentId: value };
    return { command, by, json: values.json };
  }
  if (lookups.length) throw new UsageError(`--${lookups[0]} only applies to find`);
  if (values.json) throw new UsageError(`--json only applies to find`);
  const refuse = (...names: ('reason' | 'note' | 'restock' | 'sku')[]) => {
    for (const name of names) {
      if (values[name] !== undefined && values[name] !== false)
        throw new UsageError(`--${name} does not apply to ${command}`);
    }
  };
  if (command === 'list-attention') {
    if (target !== undefined) throw new UsageError(`unexpected arguments: ${positionals.slice(1).join(' ')}`);
    refuse('reason', 'note', 'restock');
    return { command, sku: values.sku?.trim() || undefined };
  }
  const what = command === 'refund-oversold' ? '<sku>' : command.endsWith('-stray') ? '<sessionId>' : '<purchaseId>';
  if (!target?.trim()) throw new UsageError(`missing ${what}`);
  if (extra.length) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
  const id = target.trim();
  const on = command.endsWith('-stray') ? 'stray' : 'purchase';
  if (command.startsWith('retry')) {
    refuse('reason', 'note', 'restock', 'sku');
    return { command: 'attend', on, target: id, verb: { action: 'retry' } };
  }
  if (command.startsWith('settle')) {
    refuse('reason', 'restock', 'sku');
    const note = text('note', values.note, 'say what was done by hand: it goes to the record and the audit trail');
    return { command: 'attend', on, target: id, verb: { action: 'settled', note } };
  }
  refuse('sku');
  const reason = text('reason', values.reason, 'it goes to the buyer word for word, and to the audit trail');
  const note =
    values.note === undefined ? undefined : text('note', values.note, 'or leave it out: it is kept internal');
  if (command === 'refund-oversold') {
    if (values.restock)
      throw new UsageError('--restock does not apply: oversold units always go back to the allowance');
    return { command, sku: id, reason, note };
  }
  return { command: 'refund', purchaseId: id, reason, restock: values.restock, note };
}
