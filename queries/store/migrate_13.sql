-- name: migrate_13
-- Store schema 13: where a session's ADK release is not known (inferred as a range, or never), the range its rule sets leave open: per call, the lowest and highest characters its window has under them (null where they agree, or where a trace or the measured prompts settled it), and per session the rule boundaries inside the range (analysis/facts.py, _settled). Every session's facts are rebuilt at the next refresh (their rules changed).
-- params: (none)
ALTER TABLE fact_calls ADD COLUMN IF NOT EXISTS chars_low BIGINT;
ALTER TABLE fact_calls ADD COLUMN IF NOT EXISTS chars_high BIGINT;
ALTER TABLE fact_sessions ADD COLUMN IF NOT EXISTS rules_range VARCHAR;
