-- name: session_rows
-- The sessions seen in `raw_sessions` (the source's own table) and in the batch's events (`batch_sessions`: those of `staged`, and those a family made).
-- params: (none)
-- A create or update time that is not a time between 1970 and 3000 (NaN, an infinity,
-- 1e300: a hostile file's) is unknown, as stage_events judges an event's.
SELECT app_name, user_id, session_id,
       min(create_time) AS create_time, max(update_time) AS update_time
FROM (
    SELECT app_name, user_id, session_id,
           CASE WHEN create_time BETWEEN 0 AND 32503680000
                THEN make_timestamp((create_time * 1000000)::BIGINT) END AS create_time,
           CASE WHEN update_time BETWEEN 0 AND 32503680000
                THEN make_timestamp((update_time * 1000000)::BIGINT) END AS update_time
    FROM raw_sessions
    UNION ALL
    SELECT DISTINCT app_name, user_id, session_id, NULL, NULL FROM batch_sessions
)
GROUP BY app_name, user_id, session_id;
