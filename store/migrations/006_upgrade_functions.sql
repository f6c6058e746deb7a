-- Brings every database to today's shape of the hold path, whichever version of
-- 003_hold_batch.sql it was migrated with, and widens order totals to 64 bits.
--
-- 003 was edited six times after it had been applied (before the runner kept checksums), so a
-- database migrated from an older checkout kept older SQL: `reclaim_expired` returning allowance
-- units to the hold's bucket instead of bucket 0, `take_holds_batch` without `deferred`, and no
-- `allocate_units`, `take_stock`, `lock_buckets` or `apply_takes` at all (a hold across buckets
-- then fails with "function take_stock does not exist"). Each function below is 003's current body,
-- replaced in place: no signature ever changed across those versions, so no old one is dropped,
-- and on a database that already has them this changes nothing. 001, 002, 004 and 005 were never
-- edited after their first commit; their functions and triggers are as they were applied.
-- From now on the runner refuses to start when an applied file changes: a change is a new file.

-- An order total is price x quantity: an integer overflows at 2^31 cents. (Products are bounded at
-- creation so any order fits Stripe's largest charge, but the column no longer is the limit.)
-- Rewrites the table under an exclusive lock, once.
ALTER TABLE purchases ALTER COLUMN amount_cents TYPE bigint;

-- Returns one SKU's lapsed holds to stock: status `expired`, one increment and one ledger row each.
-- Rows another transaction is reclaiming or converting are skipped, never waited on.
CREATE OR REPLACE FUNCTION reclaim_expired(p_sku text) RETURNS integer LANGUAGE plpgsql
-- Plan each statement for the table as it is now: a generic plan cached while `holds` was small
-- (a seq scan) would stay cached for the connection as the drop fills it with thousands of rows.
SET plan_cache_mode = force_custom_plan AS $$
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

-- The one allocation rule, for the hold desk's batches and for take_stock. Serves `qtys` in order,
-- as if one after another: each from the buckets' real stock first (starting at bucket index `start`,
-- 0-based), then from the allowance below zero (down to each bucket's floor); a request that does not
-- fit in full is refused (`picks[i]` NULL) and a later, smaller one may still fit. `take` is the total
-- per bucket, `picks[i]` the 1-based index of the bucket that gave request i the most (where a release
-- returns its real units), `overs[i]` how many of its units came from the allowance.
CREATE OR REPLACE FUNCTION allocate_units(avail integer[], floors integer[], qtys integer[], start integer,
                               OUT take integer[], OUT picks integer[], OUT overs integer[])
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  nb integer := array_length(avail, 1);
  n integer := coalesce(array_length(qtys, 1), 0);
  took integer[];
  room integer; left_ integer; best integer;
  i integer; j integer; k integer; t integer;
BEGIN
  take := array_fill(0, ARRAY[nb]);
  picks := array_fill(NULL::integer, ARRAY[n]);
  overs := array_fill(0, ARRAY[n]);
  FOR i IN 1..n LOOP
    CONTINUE WHEN qtys[i] IS NULL;
    room := 0;
    FOR k IN 1..nb LOOP room := room + avail[k] - floors[k]; END LOOP;
    CONTINUE WHEN room < qtys[i];
    took := array_fill(0, ARRAY[nb]);
    left_ := qtys[i];
    FOR j IN 0..nb - 1 LOOP
      k := ((start + j) % nb) + 1;
      t := least(left_, greatest(0, avail[k]));
      took[k] := took[k] + t; avail[k] := avail[k] - t; left_ := left_ - t;
    END LOOP;
    overs[i] := left_;
    FOR j IN 0..nb - 1 LOOP
      EXIT WHEN left_ = 0;
      k := ((start + j) % nb) + 1;
      t := least(left_, avail[k] - floors[k]);
      took[k] := took[k] + t; avail[k] := avail[k] - t; left_ := left_ - t;
    END LOOP;
    best := -1;
    FOR k IN 1..nb LOOP
      take[k] := take[k] + took[k];
      IF took[k] > best THEN picks[i] := k; best := took[k]; END IF;
    END LOOP;
  END LOOP;
END $$;

-- Locks a SKU's bucket rows in bucket order (the one lock order every taker uses) and returns them.
CREATE OR REPLACE FUNCTION lock_buckets(p_sku text, OUT ids integer[], OUT avail integer[], OUT floors integer[])
LANGUAGE sql AS $$
  SELECT array_agg(s.bucket ORDER BY s.bucket), array_agg(s.available ORDER BY s.bucket), array_agg(s.floor ORDER BY s.bucket)
    FROM (SELECT sb.bucket, sb.available, sb.floor FROM stock_buckets sb WHERE sb.sku = p_sku ORDER BY sb.bucket FOR UPDATE) s
$$;

-- Applies an allocation to the (locked) bucket rows in one conditional UPDATE: the guard and the
-- CHECK stand behind the arithmetic, and a row that fails the guard fails the whole transaction.
CREATE OR REPLACE FUNCTION apply_takes(p_sku text, b_ids integer[], takes integer[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  n integer;
BEGIN
  UPDATE stock_buckets s SET available = s.available - v.take
    FROM unnest(b_ids, takes) AS v(bkt, take)
   WHERE s.sku = p_sku AND s.bucket = v.bkt AND v.take > 0 AND s.available - v.take >= s.floor;
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n <> (SELECT count(*) FROM unnest(takes) x WHERE x > 0) THEN
    RAISE EXCEPTION 'stock of % changed under a locked allocation', p_sku;
  END IF;
END $$;

-- The fallback of a single hold when no one bucket can serve it alone: lock the SKU's buckets in
-- order, allocate (across buckets, and from the allowance), and apply it with one conditional
-- UPDATE. No row when even the allowance cannot serve it.
CREATE OR REPLACE FUNCTION take_stock(p_sku text, p_qty integer, p_start integer)
RETURNS TABLE (bucket integer, oversold integer)
LANGUAGE plpgsql
-- Plan each statement for the table as it is now: a generic plan cached while `holds` was small
-- (a seq scan) would stay cached for the connection as the drop fills it with thousands of rows.
SET plan_cache_mode = force_custom_plan AS $$
DECLARE
  b_ids integer[]; b_avail integer[]; b_floor integer[];
  a record;
BEGIN
  SELECT l.ids, l.avail, l.floors INTO b_ids, b_avail, b_floor FROM lock_buckets(p_sku) l;
  IF b_ids IS NULL THEN RETURN; END IF;
  a := allocate_units(b_avail, b_floor, ARRAY[p_qty], p_start % array_length(b_ids, 1));
  IF a.picks[1] IS NULL THEN RETURN; END IF;
  PERFORM apply_takes(p_sku, b_ids, a.take);
  RETURN QUERY SELECT b_ids[a.picks[1]], a.overs[1];
END $$;

-- The hold desk's transaction for one SKU: requests are served in array order, exactly as if one
-- after another, with one conditional UPDATE of the bucket rows for the whole batch and one
-- multi-row INSERT of holds. Outcomes per request (idx is 1-based):
--   held | existing | hold_exists | limit_exceeded | sold_out | product_not_found | units_product
--   | duplicate | lost | deferred
-- `duplicate` (the same purchase id earlier in the batch) and rows that lost an INSERT race to a
-- concurrent writer (`lost`) are answered by the caller from what is stored. `deferred`: the same
-- buyer asks earlier in this batch, and the answer depends on how that ends; the caller sends it
-- again in a batch of its own.
CREATE OR REPLACE FUNCTION take_holds_batch(p_sku text, p_ids text[], p_buyers text[], p_qty integer[], p_start integer)
RETURNS TABLE (idx integer, outcome text, bucket integer, oversold integer, expires_at timestamptz, detail text)
LANGUAGE plpgsql
-- Plan each statement for the table as it is now: a generic plan cached while `holds` was small
-- (a seq scan) would stay cached for the connection as the drop fills it with thousands of rows.
SET plan_cache_mode = force_custom_plan AS $$
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
             EXISTS (SELECT 1 FROM holds h WHERE h.purchase_id = u.p) AS stored,
             row_number() OVER (PARTITION BY u.p ORDER BY u.i) > 1 AS again,
             row_number() OVER (PARTITION BY u.b ORDER BY u.i) > 1 AS buyer_again,
             coalesce(c.c, 0) AS committed,
             c.a AS active
        FROM unnest(p_ids, p_buyers) WITH ORDINALITY AS u(p, b, i)
        LEFT JOIN (
          SELECT h.buyer_id, sum(h.quantity)::int AS c, max(h.purchase_id) FILTER (WHERE h.status = 'active') AS a
            FROM holds h WHERE h.sku = p_sku AND h.buyer_id = ANY(p_buyers) AND h.status IN ('active', 'sold')
           GROUP BY h.buyer_id
        ) c ON c.buyer_id = u.b
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
