-- What a confirmed purchase tells its buyer (issue 32): when it was confirmed, and where it ships.
-- `confirmed_at` is set by the trigger below the first time a record reads `confirmed` or
-- `late_confirmed`, whichever step wrote it (the sale's conversion, a late payment's re-take), and
-- never moved after. `shipping_name` and `shipping_address` are the name and postal address Checkout
-- collected (Stripe's `collected_information.shipping_details`), kept by the saga's step that reads
-- them from Stripe at confirmation (activities/confirmation.ts) for the buyer's page and the
-- confirmation notice; the saga's history never carries them. A product that ships nowhere
-- (no `shipping_countries`) collects no address, and these stay empty.
ALTER TABLE purchases ADD COLUMN IF NOT EXISTS confirmed_at timestamptz;
ALTER TABLE purchases ADD COLUMN IF NOT EXISTS shipping_name text;
ALTER TABLE purchases ADD COLUMN IF NOT EXISTS shipping_address jsonb;

CREATE OR REPLACE FUNCTION purchase_confirmed_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status IN ('confirmed', 'late_confirmed') AND NEW.confirmed_at IS NULL THEN
    NEW.confirmed_at := now();
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER purchases_confirmed_at BEFORE UPDATE OF status ON purchases
  FOR EACH ROW EXECUTE FUNCTION purchase_confirmed_at();

-- Purchases confirmed before this migration: their last change is the best known moment (a record
-- still confirmed was last written by its confirmation, but for a support note or a dispute since).
UPDATE purchases SET confirmed_at = updated_at WHERE status IN ('confirmed', 'late_confirmed') AND confirmed_at IS NULL;
