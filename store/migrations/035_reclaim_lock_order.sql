-- A take that meets a lapsed hold another transaction is reclaiming waits for it, instead of
-- answering sold out.
--
-- reclaim_lapsed (026) locks the lapsed holds (FOR UPDATE SKIP LOCKED) and then, in the same
-- statement, updates the SKU's bucket rows. A take that ran its own reclaim in between skipped
-- those holds as "being reclaimed", locked the bucket rows before the reclaimer reached them, and
-- read them without the units coming back: the last unit of a drop, lapsed in an abandoned cart,
-- was refused as sold out to the buyer who came for it while the sweeper (or another API's take)
-- was returning it.
--
-- Now a reclaim that found something lapsed locks the SKU's bucket rows first, in bucket order (the
-- one lock order every taker uses), and only then picks the lapsed holds. A reclaim or take that
-- finds a lapsed hold while another reclaims it waits on the bucket rows until that one commits,
-- and its next statement sees the hold expired and its units back. The holds are still picked with
-- SKIP LOCKED: a hold a release or a conversion has locked is theirs to settle, and a reclaim never
-- waits on a hold row (so it cannot close a cycle with a release, which locks the hold and then a
-- bucket). Nothing changes while nothing has lapsed: the probe is all a take pays then.
CREATE OR REPLACE FUNCTION reclaim_expired(p_sku text) RETURNS integer LANGUAGE plpgsql
SET plan_cache_mode = auto
SET enable_seqscan = off
SET enable_sort = off AS $$
DECLARE
  cutoff timestamptz;
BEGIN
  SELECT now() - make_interval(secs => hold_grace_seconds) INTO cutoff FROM products WHERE sku = p_sku;
  PERFORM 1 FROM holds WHERE sku = p_sku AND status = 'active' AND expires_at <= cutoff ORDER BY expires_at LIMIT 1;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  PERFORM 1 FROM stock_buckets WHERE sku = p_sku ORDER BY bucket FOR UPDATE;
  RETURN reclaim_lapsed(p_sku, cutoff);
END $$;
