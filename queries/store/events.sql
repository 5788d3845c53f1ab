-- name: events
-- One session's events in order, with their part kinds, sizes and provider usage.
-- params: $app, $user, $session
SELECT
    event_id, invocation_id, author, timestamp, kinds, part_count AS parts, chars,
    prompt_tokens, candidates_tokens AS candidates_token_count, cached_tokens,
    error_code, error_message, is_compaction, branch, transfer_to_agent,
    app_name, user_id, session_id
FROM events
WHERE app_name = $app AND user_id = $user AND session_id = $session
ORDER BY epoch, event_id;
