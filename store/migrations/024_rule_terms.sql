-- The terms of purchase rules added through the rules module (store/rules/): each rule that a
-- product switches on with a term of its own keeps it here, under the term's name, validated by the
-- rule's own schema when the product is created. A new rule of that kind needs no column.
ALTER TABLE products ADD COLUMN IF NOT EXISTS rule_terms jsonb NOT NULL DEFAULT '{}'::jsonb;
