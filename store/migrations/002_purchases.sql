-- Purchases as the API and support see them. The purchase workflow is the live state; this row is
-- its durable record (kept current by the saga's activities), readable after the workflow closed.
CREATE TABLE purchases (
  purchase_id         text PRIMARY KEY,
  idempotency_key     text NOT NULL UNIQUE,
  request             jsonb NOT NULL,
  sku                 text NOT NULL,
  buyer_id            text NOT NULL,
  quantity            integer NOT NULL CHECK (quantity > 0),
  unit_id             text,
  status              text NOT NULL CHECK (status IN ('holding', 'awaiting_payment', 'confirmed', 'late_confirmed',
                                                      'expired', 'payment_failed', 'refunded', 'failed', 'rejected')),
  amount_cents        integer,
  currency            text,
  hold_expires_at     timestamptz,
  checkout_session_id text,
  checkout_url        text,
  payment_intent_id   text,
  reason              text,
  rejection           text,
  refund_id           text,
  refund_status       text,
  refund_reason       text,
  oversold            boolean NOT NULL DEFAULT false,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX purchases_by_status ON purchases (status, updated_at);
CREATE INDEX purchases_by_session ON purchases (checkout_session_id);

-- Stripe events seen, for dedupe: an event is skipped only once it was handed to its saga.
CREATE TABLE webhook_events (
  event_id     text PRIMARY KEY,
  type         text NOT NULL,
  purchase_id  text,
  status       text NOT NULL CHECK (status IN ('received', 'delivered', 'ignored')),
  received_at  timestamptz NOT NULL DEFAULT now(),
  delivered_at timestamptz
);

-- Who did what to a purchase outside the saga's own path (support refunds, operator actions).
CREATE TABLE audit_log (
  id          bigserial PRIMARY KEY,
  purchase_id text NOT NULL,
  actor       text NOT NULL,
  action      text NOT NULL,
  detail      jsonb NOT NULL DEFAULT '{}',
  at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_purchase ON audit_log (purchase_id, id);

-- Outbox of messages to buyers (why a payment was refunded, ...). A mailer drains it; at most one per kind.
CREATE TABLE notifications (
  id          bigserial PRIMARY KEY,
  purchase_id text NOT NULL,
  buyer_id    text NOT NULL,
  kind        text NOT NULL,
  message     text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  sent_at     timestamptz,
  UNIQUE (purchase_id, kind)
);
