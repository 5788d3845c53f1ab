-- name: invalid_events
-- Staged rows that are not JSON objects, named by their locator.
-- params: (none)
SELECT
    locator,
    CASE WHEN json_valid(unreadable_json) THEN 'event is JSON but not an object'
         ELSE 'event is not valid JSON' END AS reason
FROM staged
WHERE e IS NULL;
