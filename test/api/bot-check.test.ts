import { randomUUID } from 'node:crypto';
import test from 'ava';
import { createChallenge, solveChallenge, type Challenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { BotCheck } from '../../api/bot-check';
import { countSpentSolutions } from '../../store/bot-checks';
import { searchCounters } from '../helpers/bot-solver';
import { asBuyer, BOT_CHECK, startSystem, type System } from '../helpers/system';

// The bot check (products with `botCheck: true`): a proof of work in the ALTCHA format, solved here
// with altcha-lib's own solver as the widget would, checked at the join (with a room) or the
// purchase (without), spent once across every API process, and nothing written for a refusal.

let sys: System;
test.before(async () => {
  sys = await startSystem({ ownDatabase: true });
});
test.after.always(async () => {
  await sys?.close();
});

const payloadOf = (challenge: Challenge, solution: unknown) =>
  Buffer.from(JSON.stringify({ challenge, solution })).toString('base64');

/** A challenge from the API (`base`: which process), solved with altcha-lib's client-side solver. */
async function solved(base = sys.apiUrl): Promise<string> {
  const res = await fetch(`${base}/v1/bot-check/challenge`);
  const challenge = (await res.json()) as Challenge;
  const solution = await solveChallenge({ challenge, deriveKey });
  return payloadOf(challenge, solution);
}

const roomProduct = () =>
  sys.createProduct({ stock: 50, botCheck: true, waitingRoom: { admitPerSecond: 100, maxActive: 100 } });

async function join(sku: string, buyer: string, altcha?: string, base = sys.apiUrl) {
  const headers = { ...(await asBuyer(buyer)), ...(altcha ? { altcha } : {}) };
  return sys.api('POST', `${base}/v1/products/${sku}/queue`, undefined, headers);
}

async function written(sku: string) {
  const q = (sql: string) => sys.db.query<{ n: number }>(sql, [sku]).then((r) => r.rows[0].n);
  return {
    tickets: await q('SELECT count(*)::int AS n FROM room_tickets WHERE sku = $1'),
    purchases: await q('SELECT count(*)::int AS n FROM purchases WHERE sku = $1'),
  };
}

test.serial(
  'the challenge is signed ALTCHA v2, never cached, and its solution is within BOT_CHECK_MAX_NUMBER',
  async (t) => {
    const res = await fetch(`${sys.apiUrl}/v1/bot-check/challenge`);
    t.is(res.status, 200);
    t.is(res.headers.get('cache-control'), 'no-store');
    const challenge = (await res.json()) as Challenge;
    t.like(challenge.parameters, { algorithm: 'PBKDF2/SHA-256', cost: 1000 });
    t.regex(challenge.signature ?? '', /^[0-9a-f]{64}$/);
    t.true(challenge.parameters.expiresAt! > Date.now() / 1000 + 500);
    const solution = await solveChallenge({ challenge, deriveKey });
    t.true(solution!.counter >= 0 && solution!.counter <= BOT_CHECK.maxNumber);
  },
);

test.serial(
  'the counter is drawn from all of [0, BOT_CHECK_MAX_NUMBER]: a bot that starts halfway misses nearly half the challenges, and what it skips joins',
  async (t) => {
    const max = BOT_CHECK.maxNumber;
    const half = Math.ceil(max / 2);
    // Drawn evenly from [0, max], a counter is below `half` with probability half / (max + 1), 4/9
    // at the tests' 8: 400 challenges give about 178 such, fewer than 100 with a chance under 1e-14,
    // and a counter never drawn with one under 1e-19. Drawn from [half, max], none is below it.
    const CHALLENGES = 400;
    const seen = new Set<number>();
    const missed: { challenge: Challenge; counter: number }[] = [];
    for (let i = 0; i < CHALLENGES; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: 20 }, () =>
          fetch(`${sys.apiUrl}/v1/bot-check/challenge`).then((r) => r.json() as Promise<Challenge>),
        ),
      );
      for (const challenge of batch) {
        const widget = await solveChallenge({ challenge, deriveKey });
        seen.add(widget!.counter);
        const bot = await searchCounters(challenge, half, max);
        if (!bot.solution) missed.push({ challenge, counter: widget!.counter });
        else t.is(bot.solution.counter, widget!.counter);
      }
    }
    t.true(missed.length >= CHALLENGES / 4, `the halfway bot missed ${missed.length} of ${CHALLENGES}`);
    t.true(
      missed.every((m) => m.counter < half),
      'a miss is a counter below where the bot starts',
    );
    t.deepEqual(
      [...seen].sort((a, b) => a - b),
      Array.from({ length: max + 1 }, (_, n) => n),
      'every counter of [0, max] is drawn, none past it',
    );
    if (!missed.length) return;
    // A challenge the bot skipped is as good as any other: the widget's solution of it joins.
    const { challenge } = missed[0];
    const altcha = payloadOf(challenge, await solveChallenge({ challenge, deriveKey }));
    t.is((await join(await roomProduct(), 'bot-check-low-counter', altcha)).status, 201);
  },
);

test.serial(
  'a buyer who solves the challenge joins; joining again with the same solution is the same ticket',
  async (t) => {
    const sku = await roomProduct();
    const altcha = await solved();
    const first = await join(sku, 'bot-check-ann', altcha);
    t.is(first.status, 201);
    const again = await join(sku, 'bot-check-ann', altcha);
    t.is(again.status, 200);
    t.is(again.body.ticket, first.body.ticket);
    t.like(await written(sku), { tickets: 1, purchases: 0 });
  },
);

test.serial(
  '200 joins with no, a forged, an expired or a reused solution are all 403 naming which, with nothing written',
  async (t) => {
    const sku = await roomProduct();
    const spent = await solved();
    t.is((await join(sku, 'bot-check-first', spent)).status, 201);
    const tampered = JSON.parse(Buffer.from(await solved(), 'base64').toString()) as { challenge: Challenge };
    tampered.challenge.parameters.cost = 1;
    const elsewhere = await createChallenge({
      algorithm: 'PBKDF2/SHA-256',
      cost: 1000,
      counter: 3,
      deriveKey,
      expiresAt: Math.floor(Date.now() / 1000) + 600,
      hmacSignatureSecret: 'another-service-secret-0123456789abcdef',
    });
    const stale = new BotCheck(sys.db, { now: () => Date.now() - 11 * 60_000 }, BOT_CHECK);
    const staleChallenge = await stale.challenge();
    const expired = payloadOf(staleChallenge, await solveChallenge({ challenge: staleChallenge, deriveKey }));
    const forged = [
      payloadOf(tampered.challenge, { counter: 0, derivedKey: '00' }),
      payloadOf(elsewhere, await solveChallenge({ challenge: elsewhere, deriveKey })),
      Buffer.from('{"not":"altcha"}').toString('base64'),
      'not base64 at all %%',
    ];
    const cases: [string | undefined, string][] = Array.from({ length: 200 }, (_, i) => {
      const kind = i % 4;
      if (kind === 0) return [undefined, 'missing'];
      if (kind === 1) return [forged[i % forged.length], 'invalid'];
      if (kind === 2) return [expired, 'expired'];
      return [spent, 'reused'];
    });
    const before = await countSpentSolutions(sys.db);
    const answers = [];
    for (let i = 0; i < cases.length; i += 25) {
      answers.push(
        ...(await Promise.all(cases.slice(i, i + 25).map(([altcha], j) => join(sku, `bot-${i + j}`, altcha)))),
      );
    }
    answers.forEach((res, i) => {
      t.is(res.status, 403, `case ${i}`);
      t.like(res.body, { type: 'bot-check-failed', reason: cases[i][1] }, `case ${i}: ${JSON.stringify(res.body)}`);
    });
    t.like(await written(sku), { tickets: 1, purchases: 0 });
    t.is(await countSpentSolutions(sys.db), before, 'no refused request spent a solution');
  },
);

test.serial(
  'without a waiting room the check is at the purchase: refused with nothing written, passed once per solution',
  async (t) => {
    const sku = await sys.createProduct({ stock: 5, botCheck: true });
    const buy = async (buyer: string, altcha?: string, key = randomUUID()) =>
      sys.api(
        'POST',
        '/v1/purchases',
        { sku },
        { 'idempotency-key': key, ...(await asBuyer(buyer)), ...(altcha ? { altcha } : {}) },
      );
    const none = await buy('bot-check-ben');
    t.is(none.status, 403);
    t.like(none.body, { type: 'bot-check-failed', reason: 'missing' });
    t.like(await written(sku), { purchases: 0 });
    const workflows = sys.temporal.workflow.list({ query: `Sku = "${sku}"` });
    for await (const w of workflows) t.fail(`a workflow was started: ${w.workflowId}`);

    const altcha = await solved();
    const key = randomUUID();
    const first = await buy('bot-check-ben', altcha, key);
    t.is(first.status, 201);
    // The same request again (a retry with its key) is the same purchase; the solution on another key is spent.
    const retry = await buy('bot-check-ben', altcha, key);
    t.is(retry.status, 200);
    t.is(retry.body.purchaseId, first.body.purchaseId);
    const reused = await buy('bot-check-cid', altcha);
    t.like(reused.body, { type: 'bot-check-failed', reason: 'reused' });
    t.like(await written(sku), { purchases: 1 });
  },
);

test.serial('one solution sent to two API processes at once is accepted once', async (t) => {
  const other = await sys.startAnotherApi();
  const sku = await roomProduct();
  for (let round = 0; round < 10; round++) {
    const altcha = await solved(round % 2 ? other : sys.apiUrl);
    const [a, b] = await Promise.all([
      join(sku, `two-apis-a-${round}`, altcha),
      join(sku, `two-apis-b-${round}`, altcha, other),
    ]);
    t.deepEqual([a.status, b.status].sort(), [201, 403], `round ${round}`);
    t.is((a.status === 403 ? a : b).body.reason, 'reused');
  }
  t.like(await written(sku), { tickets: 10 });
});
