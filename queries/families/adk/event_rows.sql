-- name: event_rows
-- The store's event rows for the events in `staged`, with sizes from `staged_parts`.
-- params: (none)
WITH sizes AS (
    SELECT app_name, user_id, session_id, event_id,
           count(*)::INTEGER AS part_count,
           sum(chars)::BIGINT AS chars,
           list_sort(list(DISTINCT CASE kind WHEN 'text' THEN '1text' WHEN 'thought' THEN '2thought'
                                  WHEN 'function_call' THEN '3function_call'
                                  WHEN 'function_response' THEN '4function_response'
                                  ELSE '5other' END)) AS ranked_kinds
    FROM staged_parts
    WHERE origin = 'content'
    GROUP BY ALL
),
fields AS (
    SELECT s.*,
           coalesce(e.usage_metadata.prompt_token_count, e.usageMetadata.promptTokenCount)
               AS prompt_tokens,
           coalesce(e.usage_metadata.candidates_token_count,
                    e.usageMetadata.candidatesTokenCount) AS candidates_tokens,
           coalesce(e.usage_metadata.cached_content_token_count,
                    e.usageMetadata.cachedContentTokenCount) AS cached_tokens,
           coalesce(e.usage_metadata.thoughts_token_count, e.usageMetadata.thoughtsTokenCount)
               AS thoughts_tokens,
           coalesce(e.usage_metadata.tool_use_prompt_token_count,
                    e.usageMetadata.toolUsePromptTokenCount) AS tool_use_prompt_tokens,
           coalesce(e.usage_metadata.total_token_count, e.usageMetadata.totalTokenCount)
               AS total_tokens,
           e.actions.compaction AS c
    FROM staged AS s
    WHERE valid
)
SELECT
    f.app_name, f.user_id, f.session_id, f.event_id, f.invocation_id,
    e.author AS author,
    e.branch AS branch,
    coalesce(e.isolation_scope, e.isolationScope) AS isolation_scope,
    make_timestamp((f.epoch * 1000000)::BIGINT) AS timestamp,
    f.epoch,
    coalesce(e.model_version, e.modelVersion) AS model_version,
    e.partial AS partial,
    coalesce(e.turn_complete, e.turnComplete) AS turn_complete,
    e.interrupted AS interrupted,
    coalesce(e.finish_reason, e.finishReason) AS finish_reason,
    coalesce(e.error_code, e.errorCode) AS error_code,
    coalesce(e.error_message, e.errorMessage) AS error_message,
    coalesce(e.long_running_tool_ids, e.longRunningToolIds) AS long_running_tool_ids,
    prompt_tokens, candidates_tokens, cached_tokens, thoughts_tokens, tool_use_prompt_tokens,
    total_tokens,
    coalesce(c.start_timestamp, c.startTimestamp, c.end_timestamp, c.endTimestamp) IS NOT NULL
        AS is_compaction,
    coalesce(c.start_timestamp, c.startTimestamp) AS compaction_start,
    coalesce(c.end_timestamp, c.endTimestamp) AS compaction_end,
    coalesce(e.actions.transfer_to_agent, e.actions.transferToAgent) AS transfer_to_agent,
    coalesce(e.actions.rewind_before_invocation_id, e.actions.rewindBeforeInvocationId)
        AS rewind_before_invocation_id,
    coalesce(z.part_count, 0) AS part_count,
    coalesce(z.chars, 0) AS chars,
    coalesce(list_transform(z.ranked_kinds, lambda k: k[2:]), []::VARCHAR[]) AS kinds
FROM fields AS f
LEFT JOIN sizes AS z USING (app_name, user_id, session_id, event_id);
