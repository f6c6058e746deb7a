-- Every change of a SKU's stock or holds notifies channel `stock_changed` with the SKU, at commit,
-- so each API process's gate refreshes its view of that SKU. Statement-level: a hold desk batch of
-- many holds sends one notification per SKU (Postgres also folds identical ones of a transaction).
CREATE FUNCTION notify_stock_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('stock_changed', s.sku) FROM (SELECT DISTINCT sku FROM changed) s;
  RETURN NULL;
END $$;

CREATE TRIGGER stock_buckets_notify AFTER UPDATE ON stock_buckets
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION notify_stock_changed();
CREATE TRIGGER stock_buckets_notify_insert AFTER INSERT ON stock_buckets
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION notify_stock_changed();
CREATE TRIGGER holds_notify_insert AFTER INSERT ON holds
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION notify_stock_changed();
CREATE TRIGGER holds_notify_update AFTER UPDATE ON holds
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION notify_stock_changed();
