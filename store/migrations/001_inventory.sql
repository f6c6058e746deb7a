-- Inventory core: products, bucketed stock counters, holds keyed by purchase id, distinct units,
-- and the append-only movement ledger that `npm run reconcile` recomputes stock from.

CREATE TABLE products (
  sku                text PRIMARY KEY,
  name               text NOT NULL,
  price_cents        integer NOT NULL CHECK (price_cents >= 0),
  currency           text NOT NULL,
  total              integer NOT NULL CHECK (total >= 0),
  buckets            integer NOT NULL DEFAULT 1 CHECK (buckets BETWEEN 1 AND 64),
  hold_seconds       integer NOT NULL DEFAULT 600 CHECK (hold_seconds > 0),
  max_per_buyer      integer NOT NULL DEFAULT 1 CHECK (max_per_buyer > 0),
  oversell_allowance integer NOT NULL DEFAULT 0 CHECK (oversell_allowance >= 0),
  has_units          boolean NOT NULL DEFAULT false,
  waiting_room       jsonb,
  created_at         timestamptz NOT NULL DEFAULT now()
);

-- The count of one SKU split over N rows so concurrent takers do not all queue on one row lock.
-- `floor` is 0, except bucket 0 of a product with an oversell allowance, where it is -allowance:
-- the CHECK is the backstop behind every conditional decrement.
CREATE TABLE stock_buckets (
  sku       text NOT NULL REFERENCES products (sku),
  bucket    integer NOT NULL,
  available integer NOT NULL,
  floor     integer NOT NULL DEFAULT 0 CHECK (floor <= 0),
  PRIMARY KEY (sku, bucket),
  CHECK (available >= floor)
);

-- One row per purchase that ever claimed stock. Status moves only forward:
--   active -> released | expired | sold,  released | expired -> sold (late payment re-take),
--   sold -> restocked (support refund that puts the unit back).
CREATE TABLE holds (
  purchase_id text PRIMARY KEY,
  sku         text NOT NULL REFERENCES products (sku),
  buyer_id    text NOT NULL,
  quantity    integer NOT NULL CHECK (quantity > 0),
  bucket      integer NOT NULL,
  oversold    integer NOT NULL DEFAULT 0 CHECK (oversold >= 0 AND oversold <= quantity),
  unit_ids    text[],
  status      text NOT NULL CHECK (status IN ('active', 'released', 'expired', 'sold', 'restocked')),
  expires_at  timestamptz NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX holds_one_active_per_buyer ON holds (sku, buyer_id) WHERE status = 'active';
CREATE INDEX holds_active_by_expiry ON holds (sku, expires_at) WHERE status = 'active';
CREATE INDEX holds_buyer ON holds (sku, buyer_id);

-- Distinct units (seats): one row each.
CREATE TABLE units (
  sku         text NOT NULL REFERENCES products (sku),
  unit_id     text NOT NULL,
  status      text NOT NULL DEFAULT 'free' CHECK (status IN ('free', 'held', 'sold')),
  purchase_id text,
  PRIMARY KEY (sku, unit_id),
  CHECK ((status = 'free') = (purchase_id IS NULL))
);
CREATE UNIQUE INDEX units_by_purchase ON units (purchase_id, unit_id) WHERE purchase_id IS NOT NULL;
CREATE INDEX units_free ON units (sku) WHERE status = 'free';

-- Append-only: every change of stock is one row. Deltas are what moved between the four
-- buckets of the identity total = available + held + sold (available may be negative by the
-- oversold amount when a product has an allowance).
CREATE TABLE stock_movements (
  id          bigserial PRIMARY KEY,
  sku         text NOT NULL REFERENCES products (sku),
  purchase_id text,
  kind        text NOT NULL CHECK (kind IN ('create', 'restock', 'hold', 'release', 'expire', 'sell', 'retake', 'refund_restock')),
  total_delta     integer NOT NULL DEFAULT 0,
  available_delta integer NOT NULL DEFAULT 0,
  held_delta      integer NOT NULL DEFAULT 0,
  sold_delta      integer NOT NULL DEFAULT 0,
  oversold_delta  integer NOT NULL DEFAULT 0,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stock_movements_sku ON stock_movements (sku, id);
-- At most one movement of each transition per purchase: a retried release or restock cannot
-- write a second increment even if the guarded UPDATE were ever bypassed.
CREATE UNIQUE INDEX stock_movements_once ON stock_movements (purchase_id, kind)
  WHERE purchase_id IS NOT NULL AND kind IN ('hold', 'release', 'expire', 'sell', 'retake', 'refund_restock');

CREATE FUNCTION stock_movements_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'stock_movements is append-only';
END $$;
CREATE TRIGGER stock_movements_no_update BEFORE UPDATE OR DELETE ON stock_movements
  FOR EACH ROW EXECUTE FUNCTION stock_movements_append_only();
