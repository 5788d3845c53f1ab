-- name: invalid_events
-- Staged rows that cannot be stored (not a JSON object, impossible timestamp), by locator.
-- params: (none)
SELECT
    locator,
    CASE WHEN e IS NOT NULL THEN 'timestamp ' || epoch || ' is not a time between 1970 and 3000'
         WHEN json_valid(unreadable_json) THEN 'event is JSON but not an object'
         ELSE 'event is not valid JSON' END AS reason
FROM staged
WHERE NOT valid;
