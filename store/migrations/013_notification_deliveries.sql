-- Buyer notifications delivered per channel (worker/outbox-sender.ts): a row per notification and
-- channel (webhook, email, log), each with its own attempts, backoff and outcome, so one channel's
-- success does not count the other delivered and one channel's failure does not resend the other.
-- A sender fans a notification out to the channels it is configured with (fanned_out_at), then
-- claims due deliveries under FOR UPDATE SKIP LOCKED as migration 011 did for whole rows.
-- A delivery ends sent (sent_at) or dead (dead_at: a permanent refusal, or NOTIFY_MAX_ATTEMPTS /
-- NOTIFY_MAX_AGE_MS reached), with its last error; an operator requeues dead ones (npm run support
-- -- notifications retry). notifications.sent_at is set once every channel delivered.
-- notifications.attempts, next_attempt_at and last_error (011) are no longer written: they keep
-- the history of the rows sent before this migration. Rows not yet sent are fanned out afresh.
CREATE TABLE notification_deliveries (
  notification_id bigint NOT NULL REFERENCES notifications (id),
  channel         text NOT NULL,
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_error      text,
  sent_at         timestamptz,
  dead_at         timestamptz,
  PRIMARY KEY (notification_id, channel)
);
-- Only what is still to send is scanned, and the dead ones are listed without a scan.
CREATE INDEX notification_deliveries_due ON notification_deliveries (next_attempt_at)
  WHERE sent_at IS NULL AND dead_at IS NULL;
CREATE INDEX notification_deliveries_dead ON notification_deliveries (dead_at) WHERE dead_at IS NOT NULL;

ALTER TABLE notifications ADD COLUMN fanned_out_at timestamptz;
UPDATE notifications SET fanned_out_at = sent_at WHERE sent_at IS NOT NULL;
CREATE INDEX notifications_unfanned ON notifications (id) WHERE fanned_out_at IS NULL;
-- The whole-row schedule of 011 is read no more.
DROP INDEX IF EXISTS notifications_due;
-- Senders of the 011 code still running during a rolling deploy claim rows by notifications.
-- next_attempt_at: park it at infinity, for new rows too, so they claim nothing and deliver nothing
-- twice (this code reads it no more).
ALTER TABLE notifications ALTER COLUMN next_attempt_at SET DEFAULT 'infinity';
UPDATE notifications SET next_attempt_at = 'infinity' WHERE sent_at IS NULL;
