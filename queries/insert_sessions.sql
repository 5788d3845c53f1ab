-- name: insert_sessions
-- Record the sessions seen in `raw_sessions` and `staged`, first source wins.
-- params: $source, $ingest_id
INSERT OR IGNORE INTO sessions
SELECT app_name, user_id, session_id,
       min(create_time), max(update_time), $source, $ingest_id
FROM (
    SELECT app_name, user_id, session_id,
           make_timestamp((create_time * 1000000)::BIGINT) AS create_time,
           make_timestamp((update_time * 1000000)::BIGINT) AS update_time
    FROM raw_sessions
    UNION ALL
    SELECT DISTINCT app_name, user_id, session_id, NULL, NULL FROM staged
)
GROUP BY app_name, user_id, session_id;
