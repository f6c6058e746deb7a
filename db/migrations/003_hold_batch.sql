-- Server-side halves of the hold path, so a hot SKU pays one round trip per batch of buyers.

-- Returns one SKU's lapsed holds to stock: status `expired`, one increment and one ledger row each.
-- Rows another transaction is reclaiming or converting are skipped, never waited on.
CREATE FUNCTION reclaim_expired(p_sku text) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  n integer;
BEGIN
  WITH lapsed AS (
    SELECT purchase_id FROM holds
     WHERE sku = p_sku AND status = 'active' AND expires_at <= now()
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

-- The hold desk's transaction for one SKU: requests are served in array order, exactly as if one
-- after another, with one conditional UPDATE of the bucket rows for the whole batch and one
-- multi-row INSERT of holds. Outcomes per request (idx is 1-based):
--   held | existing | hold_exists | limit_exceeded | sold_out | product_not_found | units_product | duplicate
-- `duplicate` (the same purchase id earlier in the batch) and rows that lost an INSERT race to a
-- concurrent writer (`lost`) are answered by the caller from what is stored.
CREATE FUNCTION take_holds_batch(p_sku text, p_ids text[], p_buyers text[], p_qty integer[], p_start integer)
RETURNS TABLE (idx integer, outcome text, bucket integer, oversold integer, expires_at timestamptz, detail text)
LANGUAGE plpgsql AS $$
DECLARE
  prod       products%ROWTYPE;
  n          integer := coalesce(array_length(p_ids, 1), 0);
  nb         integer;
  b_ids      integer[];
  b_avail    integer[];
  b_floor    integer[];
  b_take     integer[];
  committed  jsonb := '{}';
  active_by  jsonb := '{}';
  seen       jsonb := '{}';
  res_out    text[] := array_fill(NULL::text, ARRAY[n]);
  res_bucket integer[] := array_fill(NULL::integer, ARRAY[n]);
  res_over   integer[] := array_fill(0, ARRAY[n]);
  res_detail text[] := array_fill(NULL::text, ARRAY[n]);
  i integer; k integer; j integer; q integer; left_ integer; room integer; t integer; best integer; best_take integer;
  took integer[];
  inserted text[];
  r record;
BEGIN
  PERFORM reclaim_expired(p_sku);
  SELECT * INTO prod FROM products WHERE sku = p_sku;
  IF NOT FOUND THEN
    RETURN QUERY SELECT g, 'product_not_found', NULL::int, 0, NULL::timestamptz, NULL::text FROM generate_series(1, n) g;
    RETURN;
  END IF;
  IF prod.has_units THEN
    RETURN QUERY SELECT g, 'units_product', NULL::int, 0, NULL::timestamptz, NULL::text FROM generate_series(1, n) g;
    RETURN;
  END IF;

  FOR r IN SELECT h.purchase_id, h.bucket, h.oversold, h.expires_at FROM holds h WHERE h.purchase_id = ANY(p_ids) LOOP
    seen := seen || jsonb_build_object(r.purchase_id, 'stored');
  END LOOP;
  FOR r IN
    SELECT h.buyer_id, sum(h.quantity)::int AS c, max(h.purchase_id) FILTER (WHERE h.status = 'active') AS a
      FROM holds h WHERE h.sku = p_sku AND h.buyer_id = ANY(p_buyers) AND h.status IN ('active', 'sold')
     GROUP BY h.buyer_id
  LOOP
    committed := committed || jsonb_build_object(r.buyer_id, r.c);
    IF r.a IS NOT NULL THEN active_by := active_by || jsonb_build_object(r.buyer_id, r.a); END IF;
  END LOOP;

  SELECT array_agg(s.bucket ORDER BY s.bucket), array_agg(s.available ORDER BY s.bucket), array_agg(s.floor ORDER BY s.bucket)
    INTO b_ids, b_avail, b_floor
    FROM (SELECT sb.bucket, sb.available, sb.floor FROM stock_buckets sb WHERE sb.sku = p_sku ORDER BY sb.bucket FOR UPDATE) s;
  nb := array_length(b_ids, 1);
  b_take := array_fill(0, ARRAY[nb]);

  FOR i IN 1..n LOOP
    IF seen ? p_ids[i] THEN
      res_out[i] := CASE WHEN seen ->> p_ids[i] = 'stored' THEN 'existing' ELSE 'duplicate' END;
      CONTINUE;
    END IF;
    seen := seen || jsonb_build_object(p_ids[i], 'batch');
    q := p_qty[i];
    IF active_by ->> p_buyers[i] = p_ids[i] THEN
      res_out[i] := 'duplicate'; -- stored by a concurrent call since this batch looked: answered from the store
      CONTINUE;
    END IF;
    IF active_by ? p_buyers[i] THEN
      res_out[i] := 'hold_exists';
      res_detail[i] := active_by ->> p_buyers[i];
      CONTINUE;
    END IF;
    IF coalesce((committed ->> p_buyers[i])::int, 0) + q > prod.max_per_buyer THEN
      res_out[i] := 'limit_exceeded';
      res_detail[i] := coalesce(committed ->> p_buyers[i], '0');
      CONTINUE;
    END IF;
    room := 0;
    FOR k IN 1..nb LOOP room := room + b_avail[k] - b_floor[k]; END LOOP;
    IF room < q THEN
      res_out[i] := 'sold_out';
      CONTINUE;
    END IF;
    -- Real stock first, from this batch's starting bucket on; then the allowance below zero.
    took := array_fill(0, ARRAY[nb]);
    left_ := q;
    FOR j IN 0..nb - 1 LOOP
      k := ((p_start + j) % nb) + 1;
      t := least(left_, greatest(0, b_avail[k]));
      took[k] := took[k] + t; b_avail[k] := b_avail[k] - t; left_ := left_ - t;
    END LOOP;
    res_over[i] := left_;
    FOR j IN 0..nb - 1 LOOP
      EXIT WHEN left_ = 0;
      k := ((p_start + j) % nb) + 1;
      t := least(left_, b_avail[k] - b_floor[k]);
      took[k] := took[k] + t; b_avail[k] := b_avail[k] - t; left_ := left_ - t;
    END LOOP;
    best := 1; best_take := -1;
    FOR k IN 1..nb LOOP
      b_take[k] := b_take[k] + took[k];
      IF took[k] > best_take THEN best := k; best_take := took[k]; END IF;
    END LOOP;
    res_out[i] := 'held';
    res_bucket[i] := b_ids[best];
    committed := committed || jsonb_build_object(p_buyers[i], coalesce((committed ->> p_buyers[i])::int, 0) + q);
    active_by := active_by || jsonb_build_object(p_buyers[i], p_ids[i]);
  END LOOP;

  -- The one conditional decrement for the batch; the guard and the CHECK stand behind the arithmetic above.
  UPDATE stock_buckets s SET available = s.available - v.take
    FROM unnest(b_ids, b_take) AS v(bkt, take)
   WHERE s.sku = p_sku AND s.bucket = v.bkt AND v.take > 0 AND s.available - v.take >= s.floor;
  GET DIAGNOSTICS t = ROW_COUNT;
  IF t <> (SELECT count(*) FROM unnest(b_take) x WHERE x > 0) THEN
    RAISE EXCEPTION 'stock of % changed under a locked batch', p_sku;
  END IF;

  WITH want AS (
    SELECT g AS i FROM generate_series(1, n) g WHERE res_out[g] = 'held'
  ), ins AS (
    INSERT INTO holds (purchase_id, sku, buyer_id, quantity, bucket, oversold, status, expires_at)
    SELECT p_ids[w.i], p_sku, p_buyers[w.i], p_qty[w.i], res_bucket[w.i], res_over[w.i], 'active',
           now() + make_interval(secs => prod.hold_seconds)
      FROM want w
    ON CONFLICT DO NOTHING
    RETURNING holds.purchase_id, holds.quantity, holds.oversold
  ), led AS (
    INSERT INTO stock_movements (sku, purchase_id, kind, available_delta, held_delta, oversold_delta)
    SELECT p_sku, ins.purchase_id, 'hold', -ins.quantity, ins.quantity, ins.oversold FROM ins
  )
  SELECT coalesce(array_agg(ins.purchase_id), '{}') INTO inserted FROM ins;

  -- A row that lost to a concurrent writer elsewhere (same purchase or same buyer) gives its units back.
  FOR i IN 1..n LOOP
    IF res_out[i] = 'held' AND NOT (p_ids[i] = ANY(inserted)) THEN
      res_out[i] := 'lost';
      UPDATE stock_buckets s SET available = s.available + p_qty[i] - res_over[i] WHERE s.sku = p_sku AND s.bucket = res_bucket[i];
      UPDATE stock_buckets s SET available = s.available + res_over[i] WHERE s.sku = p_sku AND s.bucket = 0;
    END IF;
  END LOOP;

  RETURN QUERY
    SELECT g, res_out[g], res_bucket[g], res_over[g],
           CASE WHEN res_out[g] = 'held' THEN now() + make_interval(secs => prod.hold_seconds) END,
           res_detail[g]
      FROM generate_series(1, n) g;
END $$;
