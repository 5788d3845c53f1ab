-- name: session_events
-- Events of the selected sessions (app, user, session, a list of ids, a source; with since/until: sessions with an event in [since, until)), in stored order.
-- params: $app, $user, $session, $since, $until, $sessions, $source
SELECT e.app_name, e.user_id, e.session_id, e.event_id, e.invocation_id, e.author, e.branch,
       e.isolation_scope, e.epoch, e.partial, e.error_code, e.error_message, e.is_compaction,
       e.compaction_start, e.compaction_end, e.prompt_tokens, e.cached_tokens,
       e.candidates_tokens, e.long_running_tool_ids, e.model_version, s.source, s.family
FROM events AS e
JOIN sessions AS s USING (app_name, user_id, session_id)
WHERE ($app IS NULL OR e.app_name = $app)
  AND ($user IS NULL OR e.user_id = $user)
  AND ($session IS NULL OR e.session_id = $session)
  AND ($sessions IS NULL OR list_contains($sessions, e.session_id))
  AND ($source IS NULL OR s.source = $source)
  AND (($since IS NULL AND $until IS NULL) OR EXISTS (
        SELECT 1 FROM events AS t
        WHERE t.app_name = e.app_name AND t.user_id = e.user_id AND t.session_id = e.session_id
          AND ($since IS NULL OR t.epoch >= $since) AND ($until IS NULL OR t.epoch < $until)))
ORDER BY e.app_name, e.user_id, e.session_id, e.epoch, e.event_id;
