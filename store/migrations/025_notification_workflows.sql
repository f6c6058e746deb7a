-- Buyer notifications delivered by Temporal (workflows/notification.ts): one workflow per delivery,
-- its activity's retry policy in place of the outbox sender's leases and backoff. dispatched_at says
-- a delivery was handed to its workflow; the workers hand over every owed delivery without it
-- (worker/notifier.ts): the ones a sender of an earlier version left pending at the upgrade are
-- delivered once that way (an attempt finds a delivery already sent and sends nothing), as are
-- the ones support requeues. next_attempt_at is no longer written.
ALTER TABLE notification_deliveries ADD COLUMN IF NOT EXISTS dispatched_at timestamptz;
CREATE INDEX IF NOT EXISTS notification_deliveries_undispatched ON notification_deliveries (notification_id)
  WHERE sent_at IS NULL AND dead_at IS NULL AND dispatched_at IS NULL;
DROP INDEX IF EXISTS notification_deliveries_due;
