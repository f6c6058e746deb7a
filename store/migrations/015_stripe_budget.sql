-- The Stripe budget (issue: every Stripe call paced to one budget). A Checkout Session may wait for
-- its turn, so its expiry is chosen when it is first created, not when the hold was taken, and kept
-- here: every retry of the create, and the saga's closing of a session a lost answer opened, must send
-- the very same request under the purchase's idempotency key.
ALTER TABLE purchases ADD COLUMN session_expires_at timestamptz;
