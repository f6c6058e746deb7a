-- The Stripe budget (issue: every Stripe call paced to one budget). A Checkout Session may wait for
-- its turn, so its expiry is chosen when it is first created, not when the hold was taken, and kept
-- here: every retry of the create, and the saga's closing of a session a lost answer opened, must send
-- the very same request under the purchase's idempotency key.
ALTER TABLE purchases ADD COLUMN session_expires_at timestamptz;

-- The pace new Checkout Sessions are let in at, shared by every API process: each new purchase takes
-- the next slot (at most the Stripe budget's number a second); one whose slot is later starts its
-- saga then (a delayed start), so holds are not taken long before their sessions can open.
CREATE TABLE checkout_pace (
  pace_id smallint PRIMARY KEY CHECK (pace_id = 1),
  next_at timestamptz NOT NULL
);
INSERT INTO checkout_pace (pace_id, next_at) VALUES (1, now());
-- The slot each new purchase took: its place in the line for Checkout Sessions (GET answers it).
ALTER TABLE purchases ADD COLUMN checkout_at timestamptz;

-- A waiting room without its own admission rate follows the Stripe budget (store/admitter.ts).
ALTER TABLE rooms ALTER COLUMN admit_per_second DROP NOT NULL;

-- The API's wait for a checkout (store/checkout-watch.ts): a purchase leaving `holding` (its session
-- open, or refused, or failed) is announced, so the buyer's answer need not wait for the saga's next
-- workflow task.
CREATE FUNCTION notify_purchase_answered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('purchase_answered', NEW.purchase_id);
  RETURN NULL;
END
$$;
CREATE TRIGGER purchase_answered AFTER UPDATE OF status ON purchases FOR EACH ROW
  WHEN (OLD.status = 'holding' AND NEW.status IS DISTINCT FROM 'holding')
  EXECUTE FUNCTION notify_purchase_answered();
