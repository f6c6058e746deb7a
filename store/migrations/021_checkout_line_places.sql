-- A purchase waiting in the line for its Checkout Session is already its buyer's place on the SKU
-- (store/open-purchase.ts): a new purchase of the same buyer and SKU looks for one, under the
-- buyer's lock, before it is recorded. This finds it without reading every purchase of the buyer.
CREATE INDEX IF NOT EXISTS purchases_holding_by_buyer ON purchases (buyer_id, sku) WHERE status = 'holding';
