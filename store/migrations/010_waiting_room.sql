-- The waiting room (store/room.ts). One `rooms` row per product with a room: its settings, its
-- serving counter (every place up to `serving` has been admitted) and the admitter's rate credit.
-- `room_tickets` holds one ticket per buyer and SKU; `place` is the buyer's place in line (null in
-- the pre-queue until the opening shuffles it). `room_admissions` records each step of the serving
-- counter with its time, so every API process can tell an admitted ticket when its session ends
-- without reading the ticket.
CREATE TABLE IF NOT EXISTS rooms (
  sku              text PRIMARY KEY REFERENCES products (sku),
  state            text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'paused', 'closed')),
  sold_out         boolean NOT NULL DEFAULT false,
  admit_per_second double precision NOT NULL CHECK (admit_per_second > 0),
  max_active       integer NOT NULL CHECK (max_active > 0),
  session_seconds  integer NOT NULL CHECK (session_seconds > 0),
  opens_at         timestamptz,
  -- False until the pre-queue (buyers who joined before opens_at) has been shuffled into places.
  shuffled         boolean NOT NULL,
  prequeue_size    integer NOT NULL DEFAULT 0,
  next_place       bigint NOT NULL DEFAULT 0,
  serving          bigint NOT NULL DEFAULT 0 CHECK (serving <= next_place),
  credit           double precision NOT NULL DEFAULT 0,
  credit_at        timestamptz NOT NULL DEFAULT now(),
  created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS room_tickets (
  sku                  text NOT NULL REFERENCES rooms (sku),
  buyer_id             text NOT NULL,
  ticket_id            text NOT NULL UNIQUE,
  place                bigint,
  joined_at            timestamptz NOT NULL DEFAULT now(),
  admitted_at          timestamptz,
  admission_expires_at timestamptz,
  -- The purchase this admission was spent on: set in the statement that records the purchase, so
  -- an admission token buys once (a retry of the same Idempotency-Key finds its purchase first).
  purchase_id          text,
  -- When the buyer stopped counting against max_active: the session ended unused ('expired') or
  -- the purchase reached a final status ('done').
  left_at              timestamptz,
  left_reason          text CHECK (left_reason IN ('expired', 'done')),
  PRIMARY KEY (sku, buyer_id)
);
CREATE UNIQUE INDEX IF NOT EXISTS room_tickets_place ON room_tickets (sku, place);
-- The admitter's scan: who is inside now.
CREATE INDEX IF NOT EXISTS room_tickets_inside ON room_tickets (sku)
  WHERE admitted_at IS NOT NULL AND left_at IS NULL;

CREATE TABLE IF NOT EXISTS room_admissions (
  sku         text NOT NULL REFERENCES rooms (sku),
  first_place bigint NOT NULL,
  last_place  bigint NOT NULL CHECK (last_place >= first_place),
  admitted_at timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  PRIMARY KEY (sku, last_place)
);
