-- An event id is one event. `content_sha256` is the digest of the event as first received: its
-- type, created, livemode and data, not the delivery's envelope (pending_webhooks, request,
-- api_version), which Stripe may render anew on a retry. A later delivery of the id with other
-- content is refused and counted in `other_bodies`, for operators to see. Rows from before have no
-- digest: the next delivery of such an id records its own.
ALTER TABLE webhook_events ADD COLUMN content_sha256 text;
ALTER TABLE webhook_events ADD COLUMN other_bodies integer NOT NULL DEFAULT 0;
