-- The opening of a sale belongs to the product, with or without a waiting room: no purchase before it
-- (403 not-open). A room keeps its own copy for its pre-queue (rooms.opens_at); those already created
-- give the product theirs.
ALTER TABLE products ADD COLUMN opens_at timestamptz;
UPDATE products p SET opens_at = r.opens_at FROM rooms r WHERE r.sku = p.sku AND r.opens_at IS NOT NULL;
