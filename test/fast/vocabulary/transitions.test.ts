import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { defaultPayloadConverter } from '@temporalio/common';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { canMove, PURCHASE_STATUSES, PURCHASE_TRANSITIONS, type PurchaseStatus } from '../../../vocabulary';

// The purchase's moves live in one table (docs/architecture.md) and one list (PURCHASE_TRANSITIONS):
// these tests keep the two the same, and check what the recorded sagas did against them.

const doc = readFileSync(path.join(__dirname, '../../../docs/architecture.md'), 'utf8');
const MARKER = '<!-- purchase-transitions';

/** The doc's table, as from → to pairs: each row's froms times its tos. */
function documentedMoves(): string[] {
  const start = doc.indexOf(MARKER);
  if (start < 0) throw new Error(`docs/architecture.md has no ${MARKER} table`);
  const lines = doc.slice(start).split('\n').slice(1);
  const end = lines.findIndex((l) => !l.startsWith('|'));
  const rows = lines.slice(0, end < 0 ? lines.length : end);
  const statuses = (cell: string) => [...cell.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]);
  return rows.slice(2).flatMap((row) => {
    const [from, to] = row.split('|').slice(1, 3).map(statuses);
    return from.flatMap((f) => to.map((t) => `${f} → ${t}`));
  });
}

const codedMoves = (Object.entries(PURCHASE_TRANSITIONS) as [PurchaseStatus, readonly PurchaseStatus[]][]).flatMap(
  ([from, tos]) => tos.map((to) => `${from} → ${to}`),
);

test('the table of moves in docs/architecture.md is PURCHASE_TRANSITIONS', (t) => {
  const documented = documentedMoves();
  t.deepEqual([...new Set(documented)].sort(), [...codedMoves].sort());
  t.is(new Set(documented).size, documented.length, 'a move appears in two rows of the table');
  for (const s of documented.flatMap((m) => m.split(' → '))) t.true(PURCHASE_STATUSES.includes(s as PurchaseStatus), s);
});

test('PURCHASE_TRANSITIONS names every status, and a rejected purchase moves nowhere', (t) => {
  t.deepEqual(Object.keys(PURCHASE_TRANSITIONS).sort(), [...PURCHASE_STATUSES].sort());
  t.deepEqual(PURCHASE_TRANSITIONS.rejected, []);
});

/** The PurchaseStatus search attribute's values in a recorded history, in order: the start's, then each upsert's. */
function statusesOf(file: string): PurchaseStatus[] {
  const history = historyFromJSON(JSON.parse(readFileSync(file, 'utf8')));
  const out: PurchaseStatus[] = [];
  for (const e of history.events ?? []) {
    const fields =
      e.workflowExecutionStartedEventAttributes?.searchAttributes?.indexedFields ??
      e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    const payload = fields?.PurchaseStatus;
    if (payload) out.push(defaultPayloadConverter.fromPayload<PurchaseStatus>(payload));
  }
  return out;
}

test('every move a recorded saga made is in the table', (t) => {
  const dir = path.join(__dirname, '../../replay/histories');
  const seen = new Set<string>();
  for (const generation of readdirSync(dir)) {
    for (const f of readdirSync(path.join(dir, generation)).filter((n) => n.endsWith('.json'))) {
      const statuses = statusesOf(path.join(dir, generation, f));
      for (let i = 1; i < statuses.length; i++) {
        const [from, to] = [statuses[i - 1], statuses[i]];
        t.true(canMove(from, to), `${generation}/${f}: ${from} → ${to} is not in PURCHASE_TRANSITIONS`);
        if (from !== to) seen.add(`${from} → ${to}`);
      }
    }
  }
  // The histories do reach the table: the happy path and the main compensations at least.
  for (const move of ['holding → awaiting_payment', 'awaiting_payment → confirmed', 'awaiting_payment → expired']) {
    t.true(seen.has(move), `no recorded history moves ${move}`);
  }
});
