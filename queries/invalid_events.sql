-- name: invalid_events
-- Rows of `raw_batch` that are not JSON objects, named by their locator.
-- params: (none)
SELECT
    locator,
    CASE WHEN json_valid(event_json) THEN 'event is JSON but not an object'
         ELSE 'event is not valid JSON' END AS reason
FROM raw_batch
WHERE NOT json_valid(event_json) OR json_type(event_json) <> 'OBJECT';
