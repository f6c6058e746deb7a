-- The drop's rules before stock is touched: a bot check (ALTCHA proof of work) and a limit per
-- shipping address.
--
-- `bot_check`: a join (with a waiting room) or a purchase (without one) needs a solved challenge,
-- good once across every API process: `bot_check_solutions` holds each spent challenge, keyed by
-- its HMAC signature (unique: the signed parameters carry a random salt and nonce), with what spent
-- it (a retry of the same request with the same solution passes) and its expiry (purged after).
ALTER TABLE products ADD COLUMN IF NOT EXISTS bot_check boolean NOT NULL DEFAULT false;

CREATE TABLE IF NOT EXISTS bot_check_solutions (
  signature  text PRIMARY KEY,
  spent_by   text NOT NULL,
  expires_at timestamptz NOT NULL,
  spent_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS bot_check_solutions_expiry ON bot_check_solutions (expires_at);

-- `max_per_address`: units one shipping address may buy (the address Checkout collected, normalised
-- into `address_key`, store/addresses.ts); `shipping_countries`: where Checkout lets buyers ship
-- (`shipping_address_collection.allowed_countries`). `address_claims` is to addresses what
-- `card_claims` (009) is to cards: one row per purchase, taken under an advisory lock per SKU and key.
ALTER TABLE products ADD COLUMN IF NOT EXISTS max_per_address integer
  CHECK (max_per_address IS NULL OR max_per_address > 0);
ALTER TABLE products ADD COLUMN IF NOT EXISTS shipping_countries text[];
ALTER TABLE purchases ADD COLUMN IF NOT EXISTS address_key text;

CREATE TABLE IF NOT EXISTS address_claims (
  purchase_id text PRIMARY KEY,
  sku         text NOT NULL,
  address_key text NOT NULL,
  quantity    integer NOT NULL CHECK (quantity > 0),
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS address_claims_by_address ON address_claims (sku, address_key);
