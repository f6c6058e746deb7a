-- The buyer notifications outbox, drained by the worker's sender (worker/outbox-sender.ts): each row
-- is claimed for a lease (next_attempt_at moves past the delivery's timeout, under FOR UPDATE SKIP
-- LOCKED so several workers never claim the same row), delivered, then marked sent (sent_at) or
-- given its next attempt with exponential backoff. A worker that dies mid-delivery leaves the lease
-- to lapse and another retries: at least once, with the row's id as the receiver's idempotency key.
ALTER TABLE notifications ADD COLUMN IF NOT EXISTS attempts integer NOT NULL DEFAULT 0;
ALTER TABLE notifications ADD COLUMN IF NOT EXISTS next_attempt_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE notifications ADD COLUMN IF NOT EXISTS last_error text;
-- Only what is still to send is scanned.
CREATE INDEX IF NOT EXISTS notifications_due ON notifications (next_attempt_at) WHERE sent_at IS NULL;
