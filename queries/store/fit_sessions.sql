-- name: fit_sessions
-- The sessions whose measured calls of one model ('' for calls that name none) fit its chars-per-token ratio: most measured first.
-- params: $model, $limit
SELECT e.app_name, e.user_id, e.session_id
FROM events AS e
WHERE coalesce(e.model_version, '') = $model
  AND e.prompt_tokens IS NOT NULL AND NOT e.is_compaction
GROUP BY ALL
ORDER BY count(*) DESC, e.app_name, e.user_id, e.session_id
LIMIT $limit;
