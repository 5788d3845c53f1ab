-- name: insert_parts
-- Add the normalised parts in `new_parts` that the store does not hold yet.
-- params: (none)
INSERT OR IGNORE INTO parts BY NAME
SELECT * FROM new_parts;
