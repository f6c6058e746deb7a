import test from 'ava';
import { createRoomTokens } from '../../../config/room-tokens';
import { alterSignature } from '../../helpers/tamper';

// The waiting room's tickets: a poll reads its ticket without a database, and a process remembers the
// tickets it verified, so a buyer's next poll costs no MAC. What it remembers cannot be used to pass
// a ticket that was never signed.

const claims = { sku: 'sku-1', buyerId: 'ann', ticketId: 'tk-1', place: 42 };

test('a ticket reads back as its claims, again and again, and the claims cannot be changed through a read', (t) => {
  const tokens = createRoomTokens('secret');
  const ticket = tokens.signTicket(claims);
  const first = tokens.readTicket(ticket);
  t.deepEqual(first, claims);
  t.deepEqual(tokens.readTicket(ticket), claims);
  t.throws(() => {
    (first as { place: number }).place = 1;
  });
  t.deepEqual(tokens.readTicket(ticket), claims);
});

test('after a ticket was read, its altered, re-placed or foreign variants are still refused', (t) => {
  const tokens = createRoomTokens('secret');
  const ticket = tokens.signTicket(claims);
  t.truthy(tokens.readTicket(ticket));
  t.is(tokens.readTicket(alterSignature(ticket)), null);
  const [, sig] = ticket.split('.');
  const otherPlace = Buffer.from(JSON.stringify([1, 'sku-1', 'ann', 'tk-1', 1])).toString('base64url');
  t.is(tokens.readTicket(`${otherPlace}.${sig}`), null);
  t.is(createRoomTokens('another secret').readTicket(ticket), null);
  t.is(tokens.readTicket(`${ticket}.x`), null);
  t.is(tokens.readTicket('nonsense'), null);
});

test('a pre-queue ticket (no place yet) reads with a null place', (t) => {
  const tokens = createRoomTokens('secret');
  const ticket = tokens.signTicket({ ...claims, place: null });
  t.deepEqual(tokens.readTicket(ticket), { ...claims, place: null });
});
