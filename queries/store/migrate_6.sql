-- name: migrate_6
-- Store schema 6: a session whose facts could not be built keeps a fact_sessions row with its stamp and the error, so it is not rebuilt again until its inputs or the rules change, and no query reads it.
-- params: (none)
ALTER TABLE fact_sessions ADD COLUMN IF NOT EXISTS error VARCHAR;
