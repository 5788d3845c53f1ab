-- name: stage_events
-- Parse one batch of raw events (table `raw_batch`) into `staged`, keeping rows that are valid JSON objects.
-- params: (none)
CREATE OR REPLACE TEMP TABLE staged AS
SELECT
    r.app_name, r.user_id, r.session_id, r.event_id, r.invocation_id,
    -- the event's own epoch, as ADK prefers on read; the column is the fallback
    coalesce(TRY_CAST(json_extract_string(r.event_json, '$.timestamp') AS DOUBLE), r.timestamp) AS epoch,
    r.locator, r.event_json::JSON AS j
FROM raw_batch AS r
WHERE json_valid(r.event_json) AND json_type(r.event_json) = 'OBJECT'
-- the same event twice in one batch is stored once
QUALIFY row_number() OVER (PARTITION BY r.app_name, r.user_id, r.session_id, r.event_id) = 1;
