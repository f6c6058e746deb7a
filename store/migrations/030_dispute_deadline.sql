-- Disputes (issue 31, item 5): the date by which Stripe wants the merchant's evidence
-- (`evidence_details.due_by` of the dispute), so the dispute gauge and `npm run support -- disputes`
-- can say how long is left; and a partial index on the disputed purchases, so neither reads the
-- whole purchases table (a handful of disputes among a drop's hundreds of thousands of purchases).
ALTER TABLE purchases ADD COLUMN IF NOT EXISTS dispute_due_by timestamptz;
CREATE INDEX IF NOT EXISTS purchases_disputed ON purchases (dispute_status) WHERE dispute_id IS NOT NULL;
