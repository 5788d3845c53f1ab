-- name: made_event_rows
-- The store's event rows of the events a family made itself (`made_events`, model.MADE_EVENT_SCHEMA), in event_rows.sql's columns and types: the keys its JSON would not hold are null.
-- params: (none)
SELECT
    app_name, user_id, session_id, event_id, invocation_id, author, branch,
    NULL::VARCHAR AS isolation_scope,
    make_timestamp((epoch * 1000000)::BIGINT) AS timestamp,
    epoch, model_version,
    NULL::BOOLEAN AS partial, NULL::BOOLEAN AS turn_complete, NULL::BOOLEAN AS interrupted,
    NULL::VARCHAR AS finish_reason, error_code, error_message,
    NULL::VARCHAR[] AS long_running_tool_ids,
    prompt_token_count AS prompt_tokens, candidates_token_count AS candidates_tokens,
    cached_content_token_count AS cached_tokens, thoughts_token_count AS thoughts_tokens,
    tool_use_prompt_token_count AS tool_use_prompt_tokens, total_token_count AS total_tokens,
    is_compaction, compaction_start, compaction_end,
    NULL::VARCHAR AS transfer_to_agent, NULL::VARCHAR AS rewind_before_invocation_id,
    part_count::INTEGER AS part_count, chars, kinds
FROM made_events;
