-- Sold out for now (issue 35, item 3). When every unit that can still be had is spoken for by the
-- buyers inside (held, or free and theirs to take), the admitter says so on the room row at each
-- step: how many units could still come back to the line, and when the next of them may (a hold's
-- end, or its grace's). Every API process already reads the row every ROOM_REFRESH_MS, so a poll
-- tells the waiting buyer without a read of its own. Both null otherwise.
ALTER TABLE rooms ADD COLUMN units_may_return integer, ADD COLUMN next_return_at timestamptz;
