-- The line for Checkout Sessions is read on every poll of a waiting buyer (its place: how many wait
-- ahead) and by the room's admitter (how many wait in all): both ask for `holding` purchases by their
-- slot (store/checkout-line.ts), which this finds without reading every purchase ever left holding.
CREATE INDEX IF NOT EXISTS purchases_waiting_by_slot ON purchases (checkout_at) WHERE status = 'holding';
