-- name: stale_events
-- The events of the sessions in `stale_keys` (a registered table of keys), in stored order, with their session's family: the columns store/session_events.sql reads.
-- params: (none)
SELECT e.app_name, e.user_id, e.session_id, e.event_id, e.invocation_id, e.author, e.branch,
       e.isolation_scope, e.epoch, e.partial, e.error_code, e.error_message, e.is_compaction,
       e.compaction_start, e.compaction_end, e.prompt_tokens, e.cached_tokens,
       e.candidates_tokens, e.long_running_tool_ids, e.model_version, s.family
FROM events AS e
SEMI JOIN stale_keys AS k USING (app_name, user_id, session_id)
JOIN sessions AS s USING (app_name, user_id, session_id)
ORDER BY e.app_name, e.user_id, e.session_id, e.epoch, e.event_id;
