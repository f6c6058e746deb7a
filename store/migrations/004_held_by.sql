-- A `hold-exists` refusal names the purchase that holds the SKU for the buyer, as the hold step
-- found it; the record keeps it so a retry of the same key answers the same way.
ALTER TABLE purchases ADD COLUMN held_by text;
