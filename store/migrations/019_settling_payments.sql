-- A delayed payment (a bank debit) completed in time and settling: the buyer is done with the
-- checkout, and their unit stays held until the payment settles, fails or never does (days). The
-- waiting room lets such a buyer leave (their place inside `max_active` goes to the next in line)
-- while the units they hold are not offered to anyone else (store/admitter.ts).
ALTER TABLE purchases ADD COLUMN IF NOT EXISTS settling_at timestamptz;
CREATE INDEX IF NOT EXISTS purchases_settling ON purchases (sku) WHERE settling_at IS NOT NULL AND status = 'awaiting_payment';
