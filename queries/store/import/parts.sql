-- name: parts
-- Parts of an export (`imported`) the store does not hold yet.
-- params: (none)
INSERT OR IGNORE INTO parts BY NAME SELECT * EXCLUDE (day) FROM imported;
