-- name: compaction_sessions
-- Per session in `scope_sessions`: the raw window retained after its last compaction range, and (given a threshold) its calls over it (tokens from `scope_ratios`).
-- params: $threshold
WITH over AS (
    SELECT f.app_name, f.user_id, f.session_id,
           count(*) AS over_threshold,
           count(*) FILTER (WHERE fs.first_compaction_index IS NOT NULL
                            AND f.call_index > fs.first_compaction_index) AS despite
    FROM fact_calls AS f
    SEMI JOIN scope_sessions AS o USING (app_name, user_id, session_id)
    JOIN fact_sessions AS fs USING (app_name, user_id, session_id)
    JOIN scope_ratios AS r ON r.model = f.model
    WHERE f.kind <> 'summarizer'
      AND coalesce(f.prompt_tokens, round_even(
              (f.chars_user + f.chars_model + f.chars_tool + f.chars_summary)
              / r.chars_per_token, 0)) > $threshold
    GROUP BY ALL
)
SELECT s.session_id, s.compactions, s.last_range_end, s.retained_events_after,
       round_even(s.retained_chars_after / r.chars_per_token, 0)::BIGINT
           AS retained_tokens_after,
       s.largest_retained_tool_result,
       round_even(s.largest_retained_result_chars / r.chars_per_token, 0)::BIGINT
           AS largest_retained_result_tokens,
       $threshold::BIGINT AS threshold_tokens,
       CASE WHEN $threshold IS NOT NULL THEN coalesce(v.over_threshold, 0) END
           AS calls_over_threshold,
       CASE WHEN $threshold IS NOT NULL THEN coalesce(v.despite, 0) END
           AS over_threshold_despite_compaction,
       CASE WHEN $threshold IS NOT NULL
            THEN coalesce(v.over_threshold, 0) > 0 AND s.compactions = 0 END
           AS compaction_never_fired
FROM fact_sessions AS s
JOIN scope_sessions AS o USING (app_name, user_id, session_id)
JOIN scope_ratios AS r ON r.model = s.main_model
LEFT JOIN over AS v USING (app_name, user_id, session_id)
ORDER BY o.ordinal;
