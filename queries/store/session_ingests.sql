-- name: session_ingests
-- The ingests that stored events of one session, or traced its requests: what the session's figures come from.
-- params: $app, $user, $session
WITH loaded AS (
    SELECT ingest_id, count(*)::BIGINT AS rows FROM events
    WHERE app_name = $app AND user_id = $user AND session_id = $session
    GROUP BY ingest_id
    UNION ALL
    SELECT ingest_id, count(*)::BIGINT AS rows FROM traced_calls
    WHERE session_id = $session
    GROUP BY ingest_id
)
SELECT i.ingest_id, i.kind,
       -- the session's own files where this ingest created it, else the run's location
       CASE WHEN s.ingest_id = i.ingest_id THEN s.source ELSE i.kind || ':' || i.location END
           AS source,
       i.filters, l.rows
FROM loaded AS l
JOIN ingests AS i USING (ingest_id)
LEFT JOIN sessions AS s
    ON s.app_name = $app AND s.user_id = $user AND s.session_id = $session
ORDER BY i.ingest_id;
