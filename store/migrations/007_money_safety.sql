-- Money safety: a status for purchases whose money Stripe would not let the saga settle, the
-- refund's failure and disputes on the record, events refused as not the purchase's own, and
-- money that arrived on sessions that named one of our purchases without being its own.

ALTER TABLE purchases DROP CONSTRAINT IF EXISTS purchases_status_check;
ALTER TABLE purchases ADD CONSTRAINT purchases_status_check
  CHECK (status IN ('holding', 'awaiting_payment', 'confirmed', 'late_confirmed', 'expired', 'payment_failed',
                    'refunded', 'failed', 'needs_attention', 'rejected'));

ALTER TABLE purchases ADD COLUMN IF NOT EXISTS refund_failure_reason text;
ALTER TABLE purchases ADD COLUMN IF NOT EXISTS dispute_id text;
ALTER TABLE purchases ADD COLUMN IF NOT EXISTS dispute_status text;
ALTER TABLE purchases ADD COLUMN IF NOT EXISTS dispute_reason text;
CREATE INDEX IF NOT EXISTS purchases_by_payment_intent ON purchases (payment_intent_id);

-- `rejected`: verified, but not the purchase's own (another session, amount, currency, livemode); `why` says which.
ALTER TABLE webhook_events DROP CONSTRAINT IF EXISTS webhook_events_status_check;
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_status_check
  CHECK (status IN ('received', 'delivered', 'ignored', 'rejected'));
ALTER TABLE webhook_events ADD COLUMN IF NOT EXISTS why text;

-- One row per foreign Checkout Session that was paid while naming one of our purchases. Its money
-- is refunded (workflow `stray-<session_id>`); a refund Stripe refuses leaves it for support.
CREATE TABLE IF NOT EXISTS stray_payments (
  session_id        text PRIMARY KEY,
  claimed_purchase  text NOT NULL,
  payment_intent_id text,
  amount_cents      bigint,
  currency          text,
  why               text NOT NULL,
  status            text NOT NULL CHECK (status IN ('refunding', 'refunded', 'needs_attention', 'settled_by_hand')),
  refund_id         text,
  detail            text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);

-- How far a refund has got: a write that would move it backwards (a saga's `pending` landing after
-- the webhook's `succeeded`) keeps the later status.
CREATE OR REPLACE FUNCTION refund_rank(status text) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE status WHEN 'failed' THEN 2 WHEN 'succeeded' THEN 1 WHEN 'canceled' THEN 1 ELSE 0 END
$$;
