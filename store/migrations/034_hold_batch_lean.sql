-- The hold desk's batch does per request only what a request needs (issue 35, item 6).
--
-- Measured on a batch of 64 holds (pg_stat_statements with nested statements, 644 batches):
-- 5.0 ms in Postgres per batch, of which the holds and ledger INSERT with its foreign-key checks
-- 3.2 ms, the buyers' and purchases' lookup 0.44 ms, lock_buckets 0.24 ms (a SQL function, planned
-- again on every call), and 0.8 ms in take_holds_batch's own PL/pgSQL: the answers decided in a
-- loop of six tests per request, allocate_units' loops per request and per bucket (0.17 ms for 64),
-- and the check of every held request against the array of inserted ids (64 x 64 comparisons).
--
-- Now, with the same answers:
-- - the lookup statement decides each request's answer as it reads it (existing, duplicate,
--   deferred, hold_exists, limit_exceeded, or eligible) and sums what the eligible ones ask;
-- - the bucket rows are locked by a statement of this function (its plan cached);
-- - when every eligible request fits in the real stock of the bucket the batch starts at (the
--   common case: a drop's stock is far larger than a batch), each gets that bucket and nothing from
--   the allowance, which is what allocate_units gives them, without its loops; otherwise
--   allocate_units as before;
-- - the held requests are checked against the inserted ones only when fewer were inserted.

CREATE OR REPLACE FUNCTION take_holds_batch(p_sku text, p_ids text[], p_buyers text[], p_qty integer[], p_start integer)
RETURNS TABLE (idx integer, outcome text, bucket integer, oversold integer, expires_at timestamptz, detail text)
LANGUAGE plpgsql
SET plan_cache_mode = auto
SET enable_seqscan = off AS $$
DECLARE
  prod       products%ROWTYPE;
  n          integer := coalesce(array_length(p_ids, 1), 0);
  nb         integer;
  k          integer;
  b_ids      integer[];
  b_avail    integer[];
  b_floor    integer[];
  want       integer[];
  wanted     integer;
  least_q    integer;
  takes      integer[];
  res_out    text[];
  res_bucket integer[];
  res_over   integer[];
  res_detail text[];
  i integer;
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

  -- Each request's answer as far as the store decides it, in one statement: this purchase stored, or
  -- asked earlier in the batch; this buyer asked earlier in the batch (deferred); the buyer's active
  -- hold; what the buyer holds and bought against max_per_buyer. NULL: eligible, `want` its quantity.
  SELECT array_agg(d.out ORDER BY d.i),
         array_agg(CASE d.out WHEN 'hold_exists' THEN d.active WHEN 'limit_exceeded' THEN d.committed::text END ORDER BY d.i),
         array_agg(CASE WHEN d.out IS NULL THEN d.q END ORDER BY d.i),
         coalesce(sum(d.q) FILTER (WHERE d.out IS NULL), 0),
         min(d.q) FILTER (WHERE d.out IS NULL)
    INTO res_out, res_detail, want, wanted, least_q
    FROM (
      SELECT x.i, x.q, x.active, x.committed,
             CASE WHEN x.stored THEN 'existing'
                  WHEN x.again THEN 'duplicate'
                  WHEN x.buyer_again THEN 'deferred'
                  -- stored by a concurrent call since this batch looked: answered from the store
                  WHEN x.active = x.p THEN 'duplicate'
                  WHEN x.active IS NOT NULL THEN 'hold_exists'
                  WHEN x.committed + x.q > prod.max_per_buyer THEN 'limit_exceeded'
             END AS out
        FROM (
          SELECT u.i, u.p, u.q,
                 s.found IS NOT NULL AS stored,
                 row_number() OVER (PARTITION BY u.p ORDER BY u.i) > 1 AS again,
                 row_number() OVER (PARTITION BY u.b ORDER BY u.i) > 1 AS buyer_again,
                 coalesce(c.c, 0) AS committed,
                 c.a AS active
            FROM unnest(p_ids, p_buyers, p_qty) WITH ORDINALITY AS u(p, b, q, i)
            LEFT JOIN LATERAL (SELECT 1 AS found FROM holds h WHERE h.purchase_id = u.p LIMIT 1) s ON true
            LEFT JOIN LATERAL (
              SELECT sum(h.quantity)::int AS c, max(h.purchase_id) FILTER (WHERE h.status = 'active') AS a
                FROM holds h WHERE h.sku = p_sku AND h.buyer_id = u.b AND h.status IN ('active', 'sold')
            ) c ON true
        ) x
    ) d;

  -- The SKU's bucket rows, locked in bucket order (the one lock order every taker uses), as lock_buckets.
  SELECT array_agg(s.bucket ORDER BY s.bucket), array_agg(s.available ORDER BY s.bucket), array_agg(s.floor ORDER BY s.bucket)
    INTO b_ids, b_avail, b_floor
    FROM (SELECT sb.bucket, sb.available, sb.floor FROM stock_buckets sb WHERE sb.sku = p_sku ORDER BY sb.bucket FOR UPDATE) s;
  nb := array_length(b_ids, 1);
  k := (p_start % nb) + 1;

  IF wanted = 0 OR (least_q > 0 AND wanted <= b_avail[k]) THEN
    -- Every eligible request (if any) fits in the real stock of the bucket the batch starts at:
    -- allocate_units would give each of them that bucket and nothing from the allowance.
    res_out := (SELECT array_agg(CASE WHEN w IS NULL THEN o ELSE 'held' END ORDER BY g)
                  FROM unnest(res_out, want) WITH ORDINALITY AS t(o, w, g));
    res_bucket := array_fill(b_ids[k], ARRAY[n]);
    res_over := array_fill(0, ARRAY[n]);
    takes := array_fill(0, ARRAY[nb]);
    takes[k] := wanted;
  ELSE
    res_bucket := array_fill(NULL::integer, ARRAY[n]);
    res_over := array_fill(0, ARRAY[n]);
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
    takes := alloc.take;
  END IF;

  -- The one conditional decrement for the batch.
  PERFORM apply_takes(p_sku, b_ids, takes);

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
  IF cardinality(inserted) < (SELECT count(*) FROM unnest(res_out) o WHERE o = 'held') THEN
    FOR i IN 1..n LOOP
      IF res_out[i] = 'held' AND NOT (p_ids[i] = ANY(inserted)) THEN
        res_out[i] := 'lost';
        UPDATE stock_buckets s SET available = s.available + p_qty[i] - res_over[i] WHERE s.sku = p_sku AND s.bucket = res_bucket[i];
        UPDATE stock_buckets s SET available = s.available + res_over[i] WHERE s.sku = p_sku AND s.bucket = 0;
      END IF;
    END LOOP;
  END IF;

  RETURN QUERY
    SELECT g, res_out[g], CASE WHEN res_out[g] IN ('held', 'lost') THEN res_bucket[g] END, res_over[g],
           CASE WHEN res_out[g] = 'held' THEN now() + make_interval(secs => prod.hold_seconds) END,
           res_detail[g]
      FROM generate_series(1, n) g;
END $$;
