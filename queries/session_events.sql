-- name: session_events
-- Events of the selected sessions in stored order, with what window reconstruction needs.
-- params: $session
SELECT app_name, user_id, session_id, event_id, invocation_id, author, branch,
       isolation_scope, epoch, partial, error_code, error_message, is_compaction,
       compaction_start, compaction_end, prompt_tokens, cached_tokens, candidates_tokens,
       long_running_tool_ids, model_version
FROM events
WHERE $session IS NULL OR session_id = $session
ORDER BY app_name, user_id, session_id, epoch, event_id;
