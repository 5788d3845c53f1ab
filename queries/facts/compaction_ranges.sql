-- name: compaction_ranges
-- Per compaction event of the sessions in `scope_sessions`: its range, what it covers (stored), what the next call sent (tokens from `scope_ratios`), and for a Claude Code boundary its trigger and the preTokens Claude Code logged (transcript_events).
-- params: (none)
WITH sized AS (
    SELECT c.*, t."trigger", t.pre_tokens, o.ordinal AS session_ordinal,
           round_even(c.raw_chars_in_range / r.chars_per_token, 0)::BIGINT AS raw_tokens,
           round_even(c.summary_chars / r.chars_per_token, 0)::BIGINT AS summary_tokens,
           round_even(c.tool_chars_in_range / r.chars_per_token, 0)::BIGINT AS tool_tokens,
           round_even(c.retained_chars_after / r.chars_per_token, 0)::BIGINT AS retained_tokens,
           CASE WHEN n.kind <> 'summarizer' THEN round_even(
               (n.chars_user + n.chars_model + n.chars_tool + n.chars_summary)
               / rn.chars_per_token, 0)::BIGINT END AS next_tokens
    FROM fact_compactions AS c
    JOIN scope_sessions AS o USING (app_name, user_id, session_id)
    JOIN fact_sessions AS fs USING (app_name, user_id, session_id)
    JOIN scope_ratios AS r ON r.model = fs.main_model
    LEFT JOIN fact_calls AS n
        ON n.app_name = c.app_name AND n.user_id = c.user_id AND n.session_id = c.session_id
       AND n.call_id = c.next_call_id
    LEFT JOIN scope_ratios AS rn ON rn.model = n.model
    LEFT JOIN (SELECT app_name, user_id, session_id, event_id, "trigger", pre_tokens
               FROM transcript_events WHERE kind = 'compaction') AS t
        ON t.app_name = c.app_name AND t.user_id = c.user_id AND t.session_id = c.session_id
       AND t.event_id = c.compaction_event_id
)
SELECT session_id, compaction_event_id, appended_at, appended_after_turn, start_timestamp,
       end_timestamp, invocations_in_range, turns_in_range, raw_events_in_range,
       struct_pack("user" := raw_user_events, model := raw_model_events,
                   tool_result := raw_tool_result_events, other := raw_other_events)
           AS raw_events_by_kind,
       raw_tokens AS raw_tokens_in_range,
       tool_results_in_range,
       tool_tokens AS tool_tokens_in_range,
       summary_tokens,
       CASE WHEN raw_tokens <> 0 THEN round_even(summary_tokens / raw_tokens, 4) END AS summary_ratio,
       summarizer_prompt_tokens, summarizer_output_tokens, overlap_with_previous,
       overlap_seconds, retained_events_after,
       retained_tokens AS retained_tokens_after,
       next_call_id, summary_in_next_request, raw_in_range_sent_next,
       next_tokens AS next_request_tokens_estimated,
       "trigger", pre_tokens
FROM sized
ORDER BY session_ordinal, ordinal;
