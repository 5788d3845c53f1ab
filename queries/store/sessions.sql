-- name: sessions
-- One row per stored session: events, turns, first and last event, where it came from; with $since/$until, the sessions with an event in [since, until) (their figures over all their events); with $errors_only, those with an error.
-- params: $app, $user, $session, $since, $until, $errors_only
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
HAVING (($since IS NULL AND $until IS NULL) OR count(e.event_id) FILTER (
           WHERE ($since IS NULL OR e.epoch >= $since) AND ($until IS NULL OR e.epoch < $until)
       ) > 0)
   AND (NOT coalesce($errors_only, false) OR count(e.error_code) > 0)
ORDER BY first_event_at NULLS LAST, s.app_name, s.user_id, s.session_id;
