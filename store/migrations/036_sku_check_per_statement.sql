-- Holds and ledger rows name an existing product, checked once per statement instead of once per row
-- (issue 35, item 6: the hold desk).
--
-- A foreign key is checked by a row-level trigger: each inserted row queues an event and, at the end
-- of the statement, looks up and share-locks its product. The hold desk inserts a batch of 64 holds and
-- 64 ledger rows for one product: 128 checks of the same row. Measured on a batch of 64 (pg_stat_statements,
-- nested statements, 2 cores, durable commits): the batch's INSERT 3.2 ms with the two foreign keys,
-- 2.1 ms without; the batch 4.5 ms against 3.3 ms.
--
-- The same guarantee, per statement: the statement's new rows (a transition table) are checked against
-- `products` at its end, their products share-locked as the foreign key did (so none is deleted before
-- the insert commits), and a row without a product fails the statement with the foreign key's error
-- code. The other side as the keys had it: a product that holds or ledger rows name cannot be deleted,
-- renamed or truncated away, and a hold cannot move to another product.
--
-- Dropping a foreign key locks both tables; they are locked up front in the order the hold desk takes
-- them (products, holds, the ledger), so a sale running meanwhile waits instead of deadlocking with it.

LOCK TABLE products, holds, stock_movements IN ACCESS EXCLUSIVE MODE;
ALTER TABLE holds DROP CONSTRAINT holds_sku_fkey;
ALTER TABLE stock_movements DROP CONSTRAINT stock_movements_sku_fkey;

CREATE FUNCTION added_rows_name_products() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  missing text;
BEGIN
  SELECT a.sku INTO missing
    FROM (SELECT DISTINCT sku FROM added) a
    LEFT JOIN LATERAL (SELECT true AS found FROM products p WHERE p.sku = a.sku FOR KEY SHARE) p ON true
   WHERE p.found IS NULL
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'insert into % names no product: sku %', TG_TABLE_NAME, missing
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER holds_name_products AFTER INSERT ON holds
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION added_rows_name_products();
CREATE TRIGGER stock_movements_name_products AFTER INSERT ON stock_movements
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION added_rows_name_products();

CREATE FUNCTION hold_keeps_its_product() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'a hold keeps its product (% to %)', OLD.sku, NEW.sku USING ERRCODE = 'foreign_key_violation';
END $$;
-- Only an UPDATE that changes `sku` calls it: the status changes of every hold do not.
CREATE TRIGGER holds_keep_product BEFORE UPDATE OF sku ON holds
  FOR EACH ROW WHEN (OLD.sku IS DISTINCT FROM NEW.sku) EXECUTE FUNCTION hold_keeps_its_product();

-- After the row is gone (not before): a delete that waited for an inserter's share lock then sees the
-- rows that inserter committed, as the foreign key's check did. A TRUNCATE (statement-level, no OLD)
-- is refused while any hold or ledger row exists.
CREATE FUNCTION product_still_named() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    IF EXISTS (SELECT 1 FROM holds) OR EXISTS (SELECT 1 FROM stock_movements) THEN
      RAISE EXCEPTION 'products are named by holds or ledger rows: they cannot be truncated'
        USING ERRCODE = 'foreign_key_violation';
    END IF;
  ELSIF EXISTS (SELECT 1 FROM holds h WHERE h.sku = OLD.sku)
     OR EXISTS (SELECT 1 FROM stock_movements m WHERE m.sku = OLD.sku) THEN
    RAISE EXCEPTION 'product % is named by holds or ledger rows: it cannot be deleted or renamed', OLD.sku
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER products_named_by_holds_delete AFTER DELETE ON products
  FOR EACH ROW EXECUTE FUNCTION product_still_named();
CREATE TRIGGER products_named_by_holds_rename AFTER UPDATE OF sku ON products
  FOR EACH ROW WHEN (OLD.sku IS DISTINCT FROM NEW.sku) EXECUTE FUNCTION product_still_named();
CREATE TRIGGER products_not_truncated BEFORE TRUNCATE ON products
  FOR EACH STATEMENT EXECUTE FUNCTION product_still_named();
