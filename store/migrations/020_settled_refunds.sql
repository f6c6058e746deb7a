-- A refund support settled by hand (`settled`: the buyer was refunded outside Stripe) is final: news
-- of the failed Stripe refund it replaced, arriving late (a redelivery, refund.updated beside
-- refund.failed), must not move it back to `failed`, which would reopen the purchase and let a retry
-- refund the buyer a second time.
CREATE OR REPLACE FUNCTION refund_rank(status text) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE status WHEN 'settled' THEN 3 WHEN 'failed' THEN 2 WHEN 'succeeded' THEN 1 WHEN 'canceled' THEN 1 ELSE 0 END
$$;
