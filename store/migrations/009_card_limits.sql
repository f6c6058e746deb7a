-- Limits per payment card: a product may sell at most `max_per_card` units to one card (Stripe's card
-- fingerprint on the PaymentIntent's charge). `card_claims` holds what each card has bought of a SKU,
-- one row per purchase, taken under an advisory lock so two payments of one card cannot both pass.
ALTER TABLE products ADD COLUMN IF NOT EXISTS max_per_card integer CHECK (max_per_card IS NULL OR max_per_card > 0);
ALTER TABLE purchases ADD COLUMN IF NOT EXISTS card_fingerprint text;

CREATE TABLE IF NOT EXISTS card_claims (
  purchase_id text PRIMARY KEY,
  sku         text NOT NULL,
  fingerprint text NOT NULL,
  quantity    integer NOT NULL CHECK (quantity > 0),
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS card_claims_by_card ON card_claims (sku, fingerprint);
