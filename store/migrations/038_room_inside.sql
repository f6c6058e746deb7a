-- How many admitted buyers are inside a room (admitted, not yet left), as the admitter's last step
-- counted them: a buyer's poll says the room is full from it. Counting the admissions whose sessions
-- have not ended took buyers who bought and left for buyers inside, and told the line the room was
-- full while it went on letting buyers in. Null until the admitter steps the room.
ALTER TABLE rooms ADD COLUMN IF NOT EXISTS inside integer;
