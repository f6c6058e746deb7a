-- The API's wait for a checkout (store/checkout-watch.ts): a purchase leaving `holding` (its session
-- open, or refused, or failed) is announced, so the buyer's answer need not wait for the saga's next
-- workflow task.
CREATE OR REPLACE FUNCTION notify_purchase_answered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('purchase_answered', NEW.purchase_id);
  RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS purchase_answered ON purchases;
CREATE TRIGGER purchase_answered AFTER UPDATE OF status ON purchases FOR EACH ROW
  WHEN (OLD.status = 'holding' AND NEW.status IS DISTINCT FROM 'holding')
  EXECUTE FUNCTION notify_purchase_answered();
