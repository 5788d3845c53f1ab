-- name: session_rows
-- The sessions seen in `raw_sessions` (the source's own table) and in `staged` events.
-- params: (none)
SELECT app_name, user_id, session_id,
       min(create_time) AS create_time, max(update_time) AS update_time
FROM (
    SELECT app_name, user_id, session_id,
           make_timestamp((create_time * 1000000)::BIGINT) AS create_time,
           make_timestamp((update_time * 1000000)::BIGINT) AS update_time
    FROM raw_sessions
    UNION ALL
    SELECT DISTINCT app_name, user_id, session_id, NULL, NULL FROM staged WHERE valid
)
GROUP BY app_name, user_id, session_id;
