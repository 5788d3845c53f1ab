-- name: insert_events
-- Add the events in `staged` (with sizes from `staged_parts`) that the store does not hold yet.
-- params: $ingest_id
INSERT OR IGNORE INTO events
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
           coalesce(present(j, '$.usage_metadata'), present(j, '$.usageMetadata')) AS u,
           present(j, '$.actions.compaction') AS c,
           present(j, '$.actions') AS a
    FROM staged AS s
)
SELECT
    f.app_name, f.user_id, f.session_id, f.event_id,
    coalesce(f.invocation_id, j ->> '$.invocation_id', j ->> '$.invocationId'),
    j ->> '$.author',
    j ->> '$.branch',
    coalesce(j ->> '$.isolation_scope', j ->> '$.isolationScope'),
    make_timestamp((f.epoch * 1000000)::BIGINT),
    f.epoch,
    coalesce(j ->> '$.model_version', j ->> '$.modelVersion'),
    TRY_CAST(j ->> '$.partial' AS BOOLEAN),
    TRY_CAST(coalesce(j ->> '$.turn_complete', j ->> '$.turnComplete') AS BOOLEAN),
    TRY_CAST(j ->> '$.interrupted' AS BOOLEAN),
    coalesce(j ->> '$.finish_reason', j ->> '$.finishReason'),
    coalesce(j ->> '$.error_code', j ->> '$.errorCode'),
    coalesce(j ->> '$.error_message', j ->> '$.errorMessage'),
    TRY_CAST(coalesce(u ->> '$.prompt_token_count', u ->> '$.promptTokenCount') AS BIGINT),
    TRY_CAST(coalesce(u ->> '$.candidates_token_count', u ->> '$.candidatesTokenCount') AS BIGINT),
    TRY_CAST(coalesce(u ->> '$.cached_content_token_count', u ->> '$.cachedContentTokenCount')
             AS BIGINT),
    TRY_CAST(coalesce(u ->> '$.thoughts_token_count', u ->> '$.thoughtsTokenCount') AS BIGINT),
    TRY_CAST(coalesce(u ->> '$.tool_use_prompt_token_count', u ->> '$.toolUsePromptTokenCount')
             AS BIGINT),
    TRY_CAST(coalesce(u ->> '$.total_token_count', u ->> '$.totalTokenCount') AS BIGINT),
    c IS NOT NULL AND json_type(c) = 'OBJECT',
    TRY_CAST(coalesce(c ->> '$.start_timestamp', c ->> '$.startTimestamp') AS DOUBLE),
    TRY_CAST(coalesce(c ->> '$.end_timestamp', c ->> '$.endTimestamp') AS DOUBLE),
    coalesce(a ->> '$.transfer_to_agent', a ->> '$.transferToAgent'),
    coalesce(a ->> '$.rewind_before_invocation_id', a ->> '$.rewindBeforeInvocationId'),
    coalesce(z.part_count, 0),
    coalesce(z.chars, 0),
    coalesce(list_transform(z.ranked_kinds, lambda k: k[2:]), []::VARCHAR[]),
    j,
    $ingest_id
FROM fields AS f
LEFT JOIN sizes AS z USING (app_name, user_id, session_id, event_id);
