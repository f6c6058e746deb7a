-- `refused`: the stray-payment saga did not refund the money, because the session as Stripe returns
-- it and our records do not bear out that it is stray (it is a purchase's own session or payment, or
-- Stripe's session does not name the purchase the event claimed). No money moved; `detail` says why,
-- and an audit_log row `stray_refund_refused` is on each purchase concerned.
ALTER TABLE stray_payments DROP CONSTRAINT IF EXISTS stray_payments_status_check;
ALTER TABLE stray_payments ADD CONSTRAINT stray_payments_status_check
  CHECK (status IN ('refunding', 'refunded', 'needs_attention', 'settled_by_hand', 'refused'));
