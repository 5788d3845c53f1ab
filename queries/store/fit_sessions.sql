-- name: fit_sessions
-- The sessions of one source whose measured calls fit its chars-per-token ratio: most measured first.
-- params: $source, $limit
SELECT e.app_name, e.user_id, e.session_id
FROM events AS e
JOIN sessions AS s USING (app_name, user_id, session_id)
WHERE s.source = $source AND e.prompt_tokens IS NOT NULL AND NOT e.is_compaction
GROUP BY ALL
ORDER BY count(*) DESC, e.app_name, e.user_id, e.session_id
LIMIT $limit;
