-- name: session_events
-- Events of the selected sessions (one id, or a list of ids of one source) in stored order.
-- params: $session, $sessions, $source
SELECT e.app_name, e.user_id, e.session_id, e.event_id, e.invocation_id, e.author, e.branch,
       e.isolation_scope, e.epoch, e.partial, e.error_code, e.error_message, e.is_compaction,
       e.compaction_start, e.compaction_end, e.prompt_tokens, e.cached_tokens,
       e.candidates_tokens, e.long_running_tool_ids, e.model_version, s.source
FROM events AS e
JOIN sessions AS s USING (app_name, user_id, session_id)
WHERE ($session IS NULL OR e.session_id = $session)
  AND ($sessions IS NULL OR list_contains($sessions, e.session_id))
  AND ($source IS NULL OR s.source = $source)
ORDER BY e.app_name, e.user_id, e.session_id, e.epoch, e.event_id;
