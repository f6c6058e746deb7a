-- Buyers are who their token says, and an Idempotency-Key is the buyer's own: two buyers who pick
-- the same key make two purchases (the purchase id is derived from the buyer and the key).
ALTER TABLE purchases DROP CONSTRAINT IF EXISTS purchases_idempotency_key_key;
CREATE UNIQUE INDEX IF NOT EXISTS purchases_buyer_idempotency_key ON purchases (buyer_id, idempotency_key);
