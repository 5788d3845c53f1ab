-- name: session_rows
-- The sessions seen in `raw_sessions` (the source's own table) and in the batch's events (`batch_sessions`: those of `staged`, and those a family made).
-- params: (none)
SELECT app_name, user_id, session_id,
       min(create_time) AS create_time, max(update_time) AS update_time
FROM (
    SELECT app_name, user_id, session_id,
           make_timestamp((create_time * 1000000)::BIGINT) AS create_time,
           make_timestamp((update_time * 1000000)::BIGINT) AS update_time
    FROM raw_sessions
    UNION ALL
    SELECT DISTINCT app_name, user_id, session_id, NULL, NULL FROM batch_sessions
)
GROUP BY app_name, user_id, session_id;
