-- A payment made while its hold ran can be reported a little after the hold lapsed: Stripe's webhook
-- is late, or the saga that would close the session is behind (a busy or restarting worker). Until
-- then the unit stays out of reach of other buyers for `hold_grace_seconds` past `expires_at`, so that
-- payment still sells the hold itself instead of re-taking a unit or being refunded. The saga gives
-- an unpaid unit back itself when its hold timer fires, without waiting for the grace; only the
-- fallback (the next take, the sweeper) waits. Products created before this get the default.
ALTER TABLE products ADD COLUMN hold_grace_seconds integer NOT NULL DEFAULT 30
  CHECK (hold_grace_seconds BETWEEN 0 AND 3600);

-- As in 006, but a hold is reclaimed only once its grace is over.
CREATE OR REPLACE FUNCTION reclaim_expired(p_sku text) RETURNS integer LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan AS $$
DECLARE
  n integer;
  cutoff timestamptz;
BEGIN
  SELECT now() - make_interval(secs => hold_grace_seconds) INTO cutoff FROM products WHERE sku = p_sku;
  WITH lapsed AS (
    SELECT purchase_id FROM holds
     WHERE sku = p_sku AND status = 'active' AND expires_at <= cutoff
     FOR UPDATE SKIP LOCKED
  ), expired AS (
    UPDATE holds h SET status = 'expired', updated_at = now()
      FROM lapsed WHERE h.purchase_id = lapsed.purchase_id
    RETURNING h.purchase_id, h.bucket, h.quantity, h.oversold, h.unit_ids
  ), restored AS (
    -- Real units to the hold's bucket; allowance units to bucket 0, the only one with a floor below zero.
    UPDATE stock_buckets s SET available = s.available + v.qty
      FROM (SELECT bucket, sum(qty)::int AS qty
              FROM (SELECT bucket, quantity - oversold AS qty FROM expired
                    UNION ALL SELECT 0, oversold FROM expired) parts
             GROUP BY bucket) v
     WHERE s.sku = p_sku AND s.bucket = v.bucket AND v.qty > 0
  ), freed AS (
    UPDATE units u SET status = 'free', purchase_id = NULL
      FROM expired e WHERE e.unit_ids IS NOT NULL AND u.purchase_id = e.purchase_id
  )
  INSERT INTO stock_movements (sku, purchase_id, kind, available_delta, held_delta, oversold_delta)
  SELECT p_sku, purchase_id, 'expire', quantity, -quantity, -oversold FROM expired;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;
