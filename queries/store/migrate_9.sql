-- name: migrate_9
-- Store schema 9: what a tool-output guard sizes, per function_response part (stage_parts): where its rows are, each row's compact JSON length and what Python's json.dumps adds to it, the rest of the response, and the rows as a markdown table when flat. Parts stored before it have none (null): re-ingest with --full to size them.
-- params: (none)
ALTER TABLE parts ADD COLUMN IF NOT EXISTS rows_key VARCHAR;
ALTER TABLE parts ADD COLUMN IF NOT EXISTS row_chars INTEGER[];
ALTER TABLE parts ADD COLUMN IF NOT EXISTS row_extra INTEGER[];
ALTER TABLE parts ADD COLUMN IF NOT EXISTS envelope_chars BIGINT;
ALTER TABLE parts ADD COLUMN IF NOT EXISTS envelope_extra BIGINT;
ALTER TABLE parts ADD COLUMN IF NOT EXISTS markdown_chars BIGINT;
