-- name: logged
-- The logged records (OpenSearch spans and logs, LiteLLM payloads) of an export, with the UTC day each started (a partition key): those whose session is an exported session's id (a record names no app or user; a span or log without one takes its trace's, as failures/logged.sql does); with no app, user or session chosen, also every other record in [since, until) (all of them without since/until), so a logs-only store exports its records too.
-- params: $app, $user, $session, $since, $until
WITH filled AS (
    SELECT l.*,
           CASE WHEN l.trace_id IS NULL THEN l.session_id
                ELSE coalesce(l.session_id, max(l.session_id) OVER (PARTITION BY l.trace_id))
           END AS session_key
    FROM logged AS l
)
SELECT f.* EXCLUDE (session_key),
       strftime(make_timestamp((f.started_at * 1000000)::BIGINT), '%Y-%m-%d') AS day
FROM filled AS f
WHERE f.session_key IN (SELECT session_id FROM export_keys)
   OR ($app IS NULL AND $user IS NULL
       AND ($session IS NULL OR f.session_key = $session)
       AND ($since IS NULL OR f.started_at >= $since)
       AND ($until IS NULL OR f.started_at < $until))
ORDER BY f.started_at NULLS LAST, f.record_key;
