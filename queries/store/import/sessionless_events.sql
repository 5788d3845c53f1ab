-- name: sessionless_events
-- The sessions of events ingest $ingest_id loaded that the store holds no session row for, with their events, at most 3: an export whose partition folder was renamed puts its events under an app their sessions are not of.
-- params: $ingest_id
SELECT e.app_name, e.user_id, e.session_id, count(*) AS events
FROM events AS e
WHERE e.ingest_id = $ingest_id
  AND NOT EXISTS (SELECT 1 FROM sessions AS s
                  WHERE s.app_name = e.app_name AND s.user_id = e.user_id
                    AND s.session_id = e.session_id)
GROUP BY ALL
ORDER BY ALL
LIMIT 3
