-- Workers before 1.3 sent buyer notifications themselves: each claimed the deliveries whose
-- next_attempt_at had come (store/outbox.ts of 1.2). 025 moved delivery to Temporal workflows but
-- left that column's default at now(), so in a rolling upgrade from 1.2, while old workers still
-- ran beside the new ones, an old worker and a new workflow could send the same delivery at once
-- (the "sent already" check holds only once one of them has finished). Park the column at infinity,
-- for new rows too, as 013 did for the sender before that one: an old worker claims nothing. The
-- workflows do not read it.
ALTER TABLE notification_deliveries ALTER COLUMN next_attempt_at SET DEFAULT 'infinity';
UPDATE notification_deliveries SET next_attempt_at = 'infinity'
 WHERE sent_at IS NULL AND dead_at IS NULL AND next_attempt_at <> 'infinity';
