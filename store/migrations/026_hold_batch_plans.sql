-- The hold desk's batch, planned once per connection instead of on every call (issue 35, item 6).
--
-- 006 set `plan_cache_mode = force_custom_plan` on take_holds_batch and reclaim_expired so that a
-- generic plan cached while `holds` was small (a seq scan) would not stay as the drop fills it. The
-- setting holds for everything the call runs, the foreign-key checks of its inserts included: a
-- batch of 64 holds planned its dozen statements and 128 `SELECT 1 FROM products … FOR KEY SHARE`
-- afresh each time, about half the batch's time in Postgres. Measured besides: the lapsed holds'
-- lookup, planned for a SKU the statistics do not know yet (every drop's SKU until autovacuum
-- analyses `holds` again), took `holds_buyer` over `holds_active_by_expiry` (both cost the same on
-- a one-row estimate) and read every hold of the SKU on every take: 13 ms at 12,000 holds.
--
-- Now each statement is written so that only the index it means can serve it cheaply, and the two
-- functions forbid sequential scans of their own, so a plan cached on a small table is the same
-- index probe on a large one: the purchases and buyers of a batch are looked up one by one
-- (LATERAL ... LIMIT, which Postgres cannot turn into a join that reads the table), the lapsed
-- holds in expiry order (which only `holds_active_by_expiry` gives without a sort). The reclaim
-- itself, which runs only when a hold has lapsed, keeps its per-call plan in a function of its own.

-- The reclaim proper, as in 014, for a SKU known to have lapsed holds past `cutoff`.
CREATE FUNCTION reclaim_lapsed(p_sku text, cutoff timestamptz) RETURNS integer LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan
SET enable_seqscan = on AS $$
DECLARE
  n integer;
BEGIN
  WITH lapsed AS (
    SELECT purchase_id FROM holds
     WHERE sku = p_sku AND status = 'active' AND expires_at <= cutoff
     ORDER BY expires_at
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

-- Returns one SKU's holds lapsed past their grace to stock (as in 014): first one probe of the expiry
-- index, which is all a take pays while nothing has lapsed.
CREATE OR REPLACE FUNCTION reclaim_expired(p_sku text) RETURNS integer LANGUAGE plpgsql
SET plan_cache_mode = auto
SET enable_seqscan = off AS $$
DECLARE
  cutoff timestamptz;
BEGIN
  SELECT now() - make_interval(secs => hold_grace_seconds) INTO cutoff FROM products WHERE sku = p_sku;
  PERFORM 1 FROM holds WHERE sku = p_sku AND status = 'active' AND expires_at <= cutoff ORDER BY expires_at LIMIT 1;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  RETURN reclaim_lapsed(p_sku, cutoff);
END $$;

-- As in 006, with the buyers' and purchases' lookups one probe per request.
CREATE OR REPLACE FUNCTION take_holds_batch(p_sku text, p_ids text[], p_buyers text[], p_qty integer[], p_start integer)
RETURNS TABLE (idx integer, outcome text, bucket integer, oversold integer, expires_at timestamptz, detail text)
LANGUAGE plpgsql
SET plan_cache_mode = auto
SET enable_seqscan = off AS $$
DECLARE
  prod       products%ROWTYPE;
  n          integer := coalesce(array_length(p_ids, 1), 0);
  nb         integer;
  b_ids      integer[];
  b_avail    integer[];
  b_floor    integer[];
  want       integer[] := array_fill(NULL::integer, ARRAY[n]);
  r_stored   boolean[];
  r_again    boolean[];
  r_buyer_again boolean[];
  r_committed integer[];
  r_active   text[];
  res_out    text[] := array_fill(NULL::text, ARRAY[n]);
  res_bucket integer[] := array_fill(NULL::integer, ARRAY[n]);
  res_over   integer[] := array_fill(0, ARRAY[n]);
  res_detail text[] := array_fill(NULL::text, ARRAY[n]);
  i integer; q integer;
  alloc record;
  inserted text[];
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

  -- Everything the answers depend on, per request, in one statement: is this purchase stored, or
  -- asked earlier in the batch; is this buyer asked earlier in the batch; what the buyer holds and bought.
  SELECT array_agg(x.stored ORDER BY x.i), array_agg(x.again ORDER BY x.i), array_agg(x.buyer_again ORDER BY x.i),
         array_agg(x.committed ORDER BY x.i), array_agg(x.active ORDER BY x.i)
    INTO r_stored, r_again, r_buyer_again, r_committed, r_active
    FROM (
      SELECT u.i,
             s.found IS NOT NULL AS stored,
             row_number() OVER (PARTITION BY u.p ORDER BY u.i) > 1 AS again,
             row_number() OVER (PARTITION BY u.b ORDER BY u.i) > 1 AS buyer_again,
             coalesce(c.c, 0) AS committed,
             c.a AS active
        FROM unnest(p_ids, p_buyers) WITH ORDINALITY AS u(p, b, i)
        LEFT JOIN LATERAL (SELECT 1 AS found FROM holds h WHERE h.purchase_id = u.p LIMIT 1) s ON true
        LEFT JOIN LATERAL (
          SELECT sum(h.quantity)::int AS c, max(h.purchase_id) FILTER (WHERE h.status = 'active') AS a
            FROM holds h WHERE h.sku = p_sku AND h.buyer_id = u.b AND h.status IN ('active', 'sold')
        ) c ON true
    ) x;

  SELECT l.ids, l.avail, l.floors INTO b_ids, b_avail, b_floor FROM lock_buckets(p_sku) l;
  nb := array_length(b_ids, 1);

  FOR i IN 1..n LOOP
    q := p_qty[i];
    IF r_stored[i] THEN
      res_out[i] := 'existing';
    ELSIF r_again[i] THEN
      res_out[i] := 'duplicate';
    ELSIF r_buyer_again[i] THEN
      res_out[i] := 'deferred';
    ELSIF r_active[i] = p_ids[i] THEN
      res_out[i] := 'duplicate'; -- stored by a concurrent call since this batch looked: answered from the store
    ELSIF r_active[i] IS NOT NULL THEN
      res_out[i] := 'hold_exists';
      res_detail[i] := r_active[i];
    ELSIF r_committed[i] + q > prod.max_per_buyer THEN
      res_out[i] := 'limit_exceeded';
      res_detail[i] := r_committed[i]::text;
    ELSE
      -- Eligible: it takes part in the allocation below, in arrival order (and may find the stock gone).
      want[i] := q;
    END IF;
  END LOOP;

  alloc := allocate_units(b_avail, b_floor, want, p_start % nb);
  FOR i IN 1..n LOOP
    CONTINUE WHEN want[i] IS NULL;
    IF alloc.picks[i] IS NULL THEN
      res_out[i] := 'sold_out';
    ELSE
      res_out[i] := 'held';
      res_bucket[i] := b_ids[alloc.picks[i]];
      res_over[i] := alloc.overs[i];
    END IF;
  END LOOP;

  -- The one conditional decrement for the batch.
  PERFORM apply_takes(p_sku, b_ids, alloc.take);

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
