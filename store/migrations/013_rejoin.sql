-- A buyer whose turn is over (the admission lapsed unused, or its purchase ended) may join the line
-- again and takes a new place at the back: a new ticket. One *current* ticket per buyer and SKU, no
-- longer one ticket for ever; the earlier ones stay as they were (their polls still answer how that
-- turn ended) and name the ticket that replaced them.
ALTER TABLE room_tickets ADD COLUMN superseded_by text;
ALTER TABLE room_tickets DROP CONSTRAINT room_tickets_pkey;
CREATE UNIQUE INDEX room_tickets_current ON room_tickets (sku, buyer_id) WHERE superseded_by IS NULL;
