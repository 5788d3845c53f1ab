-- name: migrate_15
-- Store schema 15: each ingest's source key, what its watermark is found by (ledger.watermark): an SQLite file's resolved path, so that two files given by the same relative path from two folders are two sources (one was read from the other's watermark, its older events never), and one file given two ways is one; a source's location otherwise. An earlier run of another kind keeps its location as its key, as does an SQLite run given by an absolute path; one given by a relative path has none, so its file is read whole once more (its events are stored once), as is one whose absolute path went through a link or `..` (its resolved path differs).
-- params: (none)
ALTER TABLE ingests ADD COLUMN IF NOT EXISTS source_key VARCHAR;
UPDATE ingests SET source_key = location WHERE kind <> 'adk-sqlite' OR location LIKE '/%';
