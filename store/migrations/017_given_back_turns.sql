-- A turn given back (store/admitter.ts): a purchase refused before it held anything does not spend
-- the buyer's admission, and the admitter clears the ticket's purchase. `given_back_at` says when, so
-- the admitter can tell such a buyer (who was just told nothing was free, and may have walked away)
-- from one admitted and about to buy: the first does not keep a unit that comes back from the next
-- buyer in line for the rest of the session.
ALTER TABLE room_tickets ADD COLUMN given_back_at timestamptz;
