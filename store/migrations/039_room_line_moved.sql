-- When a room's line last moved, as the admitter's steps saw it: a buyer was let in, or nobody was
-- waiting. A buyer's poll measures the room's stall from it: measured from the last admission, a
-- room idle for minutes told the first buyers to join after the spell that it was full, with the
-- idle minutes added to their wait. Null until the admitter steps the room.
ALTER TABLE rooms ADD COLUMN IF NOT EXISTS line_moved_at timestamptz;
