-- name: migrate_14
-- Store schema 14: where a session's ADK release is not known and its rule sets rebuild the windows of a tool call's issuing call and of the call after its result apart differently, how many characters the window grew between them, lowest and highest over the rule sets left (null where they agree; analysis/facts.py, _Spread.grown): the growth ranking's range. Every session's facts are rebuilt at the next refresh (their rules changed).
-- params: (none)
ALTER TABLE fact_tool_calls ADD COLUMN IF NOT EXISTS grown_chars_low BIGINT;
ALTER TABLE fact_tool_calls ADD COLUMN IF NOT EXISTS grown_chars_high BIGINT;
