-- The SKU of every hold and ledger row is checked once per statement, not once per row (issue 35, item 6).
--
-- holds.sku and stock_movements.sku referenced products (sku) as foreign keys: Postgres checks a
-- foreign key row by row, each check a query of its own (`SELECT 1 FROM products ... FOR KEY SHARE`),
-- so a hold desk batch of 64 holds ran 128 of them, all for the one SKU. Measured on one connection,
-- batches of 64 back to back (take_holds_batch of 034), the same run before and after dropping the
-- two keys: the backend's CPU per batch went from about 4.9 to 3.4 ms on a loaded machine; with the
-- checks below in their place, 034 and 035 together against 033, three pairs: 4.93 -> 3.72 ms.
--
-- What the keys guaranteed is kept by rules that cost one query per statement, or nothing on the hot
-- path:
-- - a product, once created, is never deleted, truncated, or given another SKU (the keys' other half:
--   nothing may leave a hold or a ledger row naming a SKU that is gone). Nothing in the app deletes a
--   product; stock_buckets, units and rooms keep their foreign keys;
-- - every statement that writes holds or stock_movements rows is refused when one of them names a
--   SKU that is not a product (foreign_key_violation), checked against its rows once, after it; and a
--   hold's SKU never changes (stock_movements is append-only since 001).

CREATE FUNCTION products_are_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    IF NEW.sku = OLD.sku THEN
      RETURN NEW;
    END IF;
  END IF;
  RAISE EXCEPTION 'a product is never deleted or given another SKU (holds and the ledger name it)'
    USING ERRCODE = 'foreign_key_violation';
END $$;

CREATE TRIGGER products_kept BEFORE DELETE OR UPDATE OF sku ON products
  FOR EACH ROW EXECUTE FUNCTION products_are_kept();
CREATE TRIGGER products_kept_truncate BEFORE TRUNCATE ON products
  FOR EACH STATEMENT EXECUTE FUNCTION products_are_kept();

CREATE FUNCTION skus_are_products() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  stray text;
BEGIN
  SELECT a.sku INTO stray FROM (SELECT DISTINCT sku FROM added) a
   WHERE NOT EXISTS (SELECT 1 FROM products p WHERE p.sku = a.sku) LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'insert on table "%" names SKU "%", which is not a product', TG_TABLE_NAME, stray
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER holds_sku_is_product AFTER INSERT ON holds
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION skus_are_products();
CREATE TRIGGER stock_movements_sku_is_product AFTER INSERT ON stock_movements
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION skus_are_products();

CREATE FUNCTION hold_keeps_its_sku() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'a hold keeps its SKU' USING ERRCODE = 'foreign_key_violation';
END $$;

CREATE TRIGGER holds_sku_kept BEFORE UPDATE OF sku ON holds
  FOR EACH ROW WHEN (NEW.sku IS DISTINCT FROM OLD.sku) EXECUTE FUNCTION hold_keeps_its_sku();

ALTER TABLE holds DROP CONSTRAINT holds_sku_fkey;
ALTER TABLE stock_movements DROP CONSTRAINT stock_movements_sku_fkey;
