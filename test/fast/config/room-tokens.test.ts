import { createHmac } from 'node:crypto';
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

test('a ticket does not show its buyer: the claims are sealed, and one signed before they were still reads', (t) => {
  const tokens = createRoomTokens('secret');
  const email = { ...claims, buyerId: 'ann@example.com' };
  const ticket = tokens.signTicket(email);
  const [payload] = ticket.split('.');
  for (const text of [ticket, Buffer.from(payload, 'base64url').toString('latin1')])
    t.false(text.includes('ann@example.com') || text.includes('sku-1'), text);
  t.is(tokens.signTicket(email), ticket, 'the same claims, the same ticket');
  const shorter = tokens.signTicket({ ...email, buyerId: 'an@example.com' });
  t.is(shorter.length, ticket.length, 'a buyer id one character shorter makes a ticket as long');
  t.deepEqual(tokens.readTicket(ticket), email);
  // Version 1 (the claims in the clear), as tickets already in buyers' hands were signed.
  const mac = createHmac('sha256', createHmac('sha256', 'secret').update('ticket').digest());
  const old = Buffer.from(JSON.stringify([1, 'sku-1', 'ann', 'tk-1', 42])).toString('base64url');
  const oldSig = mac.update(old).digest().subarray(0, 16).toString('base64url');
  t.deepEqual(createRoomTokens('secret').readTicket(`${old}.${oldSig}`), claims);
  // ROOM_TICKETS_SEALED=0 (an upgrade or a rollback beside API processes before 1.7): that same ticket.
  t.is(createRoomTokens('secret', undefined, { sealed: false }).signTicket(claims), `${old}.${oldSig}`);
});
