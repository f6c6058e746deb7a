-- The lapsed-holds probe of reclaim_expired (026) may only be the expiry index's own order.
--
-- A fresh-clone CI run read every active hold of a 3,000-hold SKU on every take (10,589 rows for
-- one batch of 30, test/store/hold-batch-plans.test.ts). On a one-row estimate for a SKU the
-- statistics do not know, an index that finds the SKU's active holds in buyer order and a sort of
-- the "one" row cost the same as the range probe of `holds_active_by_expiry`; Postgres took the
-- former, which reads them all and sorts them to find that none has lapsed. The probe is the only
-- statement of reclaim_expired that could sort, so sorting is turned off for the function: the one
-- plan left without a sort is the range probe, which reads nothing while nothing has lapsed.
ALTER FUNCTION reclaim_expired(text) SET enable_sort = off;
