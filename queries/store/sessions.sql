-- name: sessions
-- One row per stored session: events, turns, first and last event, where it came from.
-- params: $app, $user, $session
SELECT
    s.app_name, s.user_id, s.session_id,
    count(e.event_id)::BIGINT AS events,
    -- a compaction event carries an invocation id of its own; it is not a turn
    count(DISTINCT CASE WHEN NOT e.is_compaction THEN nullif(e.invocation_id, '') END)::BIGINT
        AS turns,
    min(e.timestamp) AS first_event_at,
    max(e.timestamp) AS last_event_at,
    count(e.error_code)::BIGINT AS errors,
    coalesce(sum(e.prompt_tokens), 0)::BIGINT AS prompt_tokens,
    s.source
FROM sessions AS s
LEFT JOIN events AS e USING (app_name, user_id, session_id)
WHERE ($app IS NULL OR s.app_name = $app) AND ($user IS NULL OR s.user_id = $user)
  AND ($session IS NULL OR s.session_id = $session)
GROUP BY s.app_name, s.user_id, s.session_id, s.source
ORDER BY first_event_at NULLS LAST, s.app_name, s.user_id, s.session_id;
