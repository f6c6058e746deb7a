import type { AddressInfo } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import type pg from 'pg';
import { SMTPServer } from 'smtp-server';
import {
  delivery,
  notification,
  NOTIFICATION_MESSAGE,
  notificationSent,
  ownDb,
  sender,
} from '../helpers/notifications';
import { until } from '../helpers/poll';

// The email channel against a real SMTP server (smtp-server, in this process): the sender's
// nodemailer transport talks SMTP to it over SMTP_URL, and the server takes the message, refuses
// the recipient for now (4yz: retried) or for good (5yz: dead at once), as a mail relay does.

const FROM = 'orders@flash-sale.test';

/** One message the server took: its envelope and its raw text (headers and body). */
interface Received {
  mailFrom: string;
  rcptTo: string[];
  raw: string;
}

/**
 * An SMTP server on 127.0.0.1 (no auth needed, no STARTTLS) answering each RCPT TO by
 * `rcpt(nth RCPT TO it saw)`: undefined accepts, a code refuses with that code. Closed at teardown.
 */
async function smtpServer(
  t: ExecutionContext,
  rcpt: (nth: number) => number | undefined = () => undefined,
  /** How long the first connection's server takes to answer MAIL FROM and RCPT TO, each (a slow relay). */
  firstConnectionReplyMs = 0,
) {
  const received: Received[] = [];
  let connections = 0;
  let rcpts = 0;
  const slow = (session: { id: string }, callback: () => void) => {
    if (firstConnectionReplyMs > 0 && session.id === firstSession) setTimeout(callback, firstConnectionReplyMs);
    else callback();
  };
  let firstSession: string | undefined;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onConnect(session, callback) {
      connections += 1;
      firstSession ??= session.id;
      callback();
    },
    onMailFrom(_address, session, callback) {
      slow(session, () => callback());
    },
    onRcptTo(_address, session, callback) {
      const code = rcpt(++rcpts);
      slow(session, () => {
        if (code === undefined) return callback();
        callback(Object.assign(new Error(`mailbox refused (test ${code})`), { responseCode: code }));
      });
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        received.push({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map((a) => a.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const { port } = server.server.address() as AddressInfo;
  return {
    env: { SMTP_URL: `smtp://127.0.0.1:${port}`, NOTIFY_EMAIL_FROM: FROM },
    received,
    connections: () => connections,
    rcpts: () => rcpts,
  };
}

/** A message's headers by lower-cased name (folded lines unfolded) and its body. */
function parse(raw: string): { headers: Map<string, string>; body: string } {
  const split = raw.indexOf('\r\n\r\n');
  const headers = new Map<string, string>();
  for (const line of raw
    .slice(0, split)
    .replace(/\r\n[ \t]+/g, ' ')
    .split('\r\n')) {
    const colon = line.indexOf(':');
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { headers, body: raw.slice(split + 4) };
}

const purchaseOf = async (db: pg.Pool, id: string): Promise<string> =>
  (await db.query('SELECT purchase_id FROM notifications WHERE id = $1', [id])).rows[0].purchase_id;

const settled = async (db: pg.Pool, id: string, column: 'sent_at' | 'dead_at') =>
  until(column, async () => ((await delivery(db, id, 'email'))?.[column] ? delivery(db, id, 'email') : undefined));

/** Several polls of the sender: time for a delivery that should not be made again to be made. */
const severalPolls = () => new Promise((r) => setTimeout(r, 400));

test('a notification to a buyer whose id is an email address is emailed once, from NOTIFY_EMAIL_FROM, with its message and a Message-ID of its own, and marked sent', async (t) => {
  const { db } = await ownDb(t);
  const smtp = await smtpServer(t);
  const { outcomes, notifier } = await sender(t, db, smtp.env);
  const id = await notification(db, { notifier, buyer: 'ana@example.test' });
  const purchaseId = await purchaseOf(db, id);

  const sent = await settled(db, id, 'sent_at');
  t.is(sent.attempts, 1);
  t.is(sent.dead_at, null);
  t.is(sent.last_error, null);
  await notificationSent(db, id); // email is its only channel
  await severalPolls();
  t.deepEqual(outcomes, ['email:delivered']);

  t.is(smtp.received.length, 1);
  const [mail] = smtp.received;
  t.is(mail.mailFrom, FROM);
  t.deepEqual(mail.rcptTo, ['ana@example.test']);
  const { headers, body } = parse(mail.raw);
  t.is(headers.get('from'), FROM);
  t.is(headers.get('to'), 'ana@example.test');
  t.is(headers.get('subject'), `About your order ${purchaseId}`);
  t.is(headers.get('message-id'), `<ntf_${id}.${purchaseId}@flash-sale-checkout>`);
  t.true(body.includes(NOTIFICATION_MESSAGE), body);
  t.true(body.includes(`Order ${purchaseId}`), body);
});

test('a transient refusal (451 at RCPT TO) is retried and the notification then emailed once', async (t) => {
  const { db } = await ownDb(t);
  const smtp = await smtpServer(t, (nth) => (nth === 1 ? 451 : undefined));
  const { outcomes, lines, notifier } = await sender(t, db, smtp.env);
  const id = await notification(db, { notifier, buyer: 'ben@example.test' });

  const sent = await settled(db, id, 'sent_at');
  t.true(sent.attempts >= 2, `attempts: ${sent.attempts}`);
  t.is(sent.dead_at, null);
  await severalPolls();
  t.is(smtp.received.length, 1, 'one message in the end');
  t.deepEqual(smtp.received[0].rcptTo, ['ben@example.test']);
  t.is(smtp.rcpts(), 2, 'refused once, taken on the retry');
  t.is(outcomes[0], 'email:failed');
  t.is(outcomes.at(-1), 'email:delivered');
  t.true(
    lines.some((l) => l.includes(`ntf_${id} `) && l.includes('attempt 1 failed') && l.includes('451')),
    lines.join('\n'),
  );
});

test('a relay slower than the deadline in all but no phase: the attempt is given up at NOTIFY_TIMEOUT_MS, and the buyer gets one email, from the retry', async (t) => {
  const { db } = await ownDb(t);
  // 1.2 s for MAIL FROM, 1.2 s for RCPT TO: each phase within the 2 s timeouts, the whole past them.
  const smtp = await smtpServer(t, () => undefined, 1_200);
  const { notifier } = await sender(t, db, smtp.env);
  const id = await notification(db, { notifier, buyer: 'slow@example.test' });

  const sent = await settled(db, id, 'sent_at');
  t.true(sent.attempts >= 2, `attempts: ${sent.attempts}`);
  // The first attempt, had it gone on beside the retry, would have delivered at about 2.4 s.
  await new Promise((r) => setTimeout(r, 1_500));
  t.is(smtp.received.length, 1, 'one email, not one per attempt');
});

test('a permanent refusal (550 at RCPT TO) is dead after one attempt, its error naming the code, and nothing is received', async (t) => {
  const { db } = await ownDb(t);
  const smtp = await smtpServer(t, () => 550);
  const { outcomes, notifier } = await sender(t, db, smtp.env);
  const id = await notification(db, { notifier, buyer: 'cy@example.test' });

  const dead = await settled(db, id, 'dead_at');
  t.is(dead.attempts, 1);
  t.is(dead.sent_at, null);
  t.regex(dead.last_error, /^SMTP refused \(550\): .*550/);
  await severalPolls(); // a dead delivery is not tried again
  t.is(smtp.rcpts(), 1);
  t.is(smtp.received.length, 0);
  t.deepEqual(outcomes, ['email:dead']);
  const { rows } = await db.query('SELECT sent_at FROM notifications WHERE id = $1', [id]);
  t.is(rows[0].sent_at, null);
});

test('a buyer id without @ is not emailed (no SMTP connection) and counts as skipped, its delivery sent; one with @ that is no address is dead at once', async (t) => {
  const { db } = await ownDb(t);
  const smtp = await smtpServer(t);
  const { outcomes, lines, notifier } = await sender(t, db, smtp.env);
  const skipped = await notification(db, { notifier, buyer: 'buyer-1' });

  const row = await settled(db, skipped, 'sent_at');
  t.is(row.attempts, 1);
  t.is(row.last_error, null);
  t.is(row.dead_at, null);
  await notificationSent(db, skipped); // nothing left to deliver: it counts sent
  t.true(
    lines.includes(`notification ntf_${skipped} not emailed: buyer id buyer-1 is not an email address`),
    lines.join('\n'),
  );

  const malformed = await notification(db, { notifier, buyer: 'dee@localhost' });
  const dead = await settled(db, malformed, 'dead_at');
  t.is(dead.attempts, 1);
  t.is(dead.last_error, 'malformed email address: dee@localhost');
  await severalPolls();
  t.deepEqual(outcomes, ['email:skipped', 'email:dead']);
  t.is(smtp.connections(), 0);
  t.is(smtp.received.length, 0);
});
