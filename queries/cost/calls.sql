-- name: calls
-- Per model call of the sessions in `scope_sessions`, in the time of `cost_window` (a failed request without usage is not billed; a summarizer without a model is priced as its session's main model): its usage as the provider bills it (the convention `cost_models` names for its model) and its cost at the rates of `cost_rates` (USD per token, by model and UTC day; the highest tier its input exceeds), with no cache writes and with every uncached input token written.
-- params: (none)
WITH usage AS (
    SELECT c.app_name, c.user_id, c.session_id, c.call_id, c.call_index, c.turn,
           c.invocation_id, c.author AS agent, c.kind, c.epoch,
           -- a compaction event names no model: its summarizer is the session's main model
           coalesce(c.model_version, CASE WHEN c.kind = 'summarizer' THEN s.main_model END, '')
               AS model,
           c.model_version IS NULL AND c.kind = 'summarizer' AND s.main_model <> ''
               AS model_inferred,
           CAST(make_timestamp(CAST(round(c.epoch * 1000000) AS BIGINT)) AS DATE) AS day,
           c.prompt_tokens, c.cached_tokens, e.candidates_tokens, e.thoughts_tokens,
           e.tool_use_prompt_tokens,
           CASE WHEN c.prompt_tokens IS NULL THEN CAST(round_even(
               (c.chars_user + c.chars_model + c.chars_tool + c.chars_summary)
               / r.chars_per_token, 0) AS BIGINT) END AS estimated_input
    FROM fact_calls AS c
    SEMI JOIN scope_sessions AS o USING (app_name, user_id, session_id)
    JOIN fact_sessions AS s USING (app_name, user_id, session_id)
    JOIN events AS e
        ON e.app_name = c.app_name AND e.user_id = c.user_id
       AND e.session_id = c.session_id AND e.event_id = c.call_id
    JOIN scope_ratios AS r ON r.model = c.model
    WHERE c.epoch >= coalesce((SELECT since FROM cost_window), '-infinity'::DOUBLE)
      AND c.epoch < coalesce((SELECT until FROM cost_window), 'infinity'::DOUBLE)
), billed AS (
    SELECT u.*, coalesce(m.convention, 'other') AS convention,
           CASE WHEN u.prompt_tokens IS NULL AND u.kind = 'failed' THEN 0
                WHEN u.prompt_tokens IS NULL THEN u.estimated_input
                WHEN m.convention = 'gemini'
                    THEN u.prompt_tokens + coalesce(u.tool_use_prompt_tokens, 0)
                ELSE u.prompt_tokens END AS input_tokens,
           coalesce(u.candidates_tokens, 0)
               + CASE WHEN m.convention = 'gemini' THEN coalesce(u.thoughts_tokens, 0) ELSE 0 END
               AS output_tokens,
           -- ADK's native Claude path excludes thinking from candidates, LiteLLM's includes it
           CASE WHEN m.convention = 'claude' THEN coalesce(u.thoughts_tokens, 0) ELSE 0 END
               AS output_tokens_unsure
    FROM usage AS u
    LEFT JOIN cost_models AS m USING (model)
), capped AS (
    SELECT *, least(coalesce(cached_tokens, 0), input_tokens) AS cache_read_tokens
    FROM billed
), priced AS (
    SELECT b.*, r.above AS tier_above, r.input AS rate_input, r.cache_read AS rate_read,
           r.cache_write AS rate_write, r.output AS rate_output,
           r.source AS price_source, r.provider, r.price_model, x.reason AS unknown_reason
    FROM capped AS b
    LEFT JOIN cost_rates AS r  -- the one tier the input reaches (above < input <= next)
        ON r.model = b.model AND r.day = b.day
       AND (r.above = 0 OR b.input_tokens > r.above)
       AND (r.next_above IS NULL OR b.input_tokens <= r.next_above)
    LEFT JOIN cost_unknown AS x ON x.model = b.model AND x.day = b.day
), amounts AS (
    SELECT *,
           cache_read_tokens * rate_read AS cache_read_usd,
           (input_tokens - cache_read_tokens) * rate_input AS uncached_input_usd,
           (input_tokens - cache_read_tokens) * rate_write AS written_input_usd,
           output_tokens * rate_output AS output_usd,
           output_tokens_unsure * rate_output AS output_unsure_usd
    FROM priced
), bounds AS (
    SELECT *,
           cache_read_usd + uncached_input_usd + output_usd AS no_writes_usd,
           cache_read_usd + written_input_usd + output_usd + output_unsure_usd AS all_written_usd
    FROM amounts
)
SELECT app_name, user_id, session_id, call_id, call_index, turn, invocation_id, agent, kind,
       epoch AS started_at, day, model, provider, price_model, price_source, tier_above,
       convention AS usage_convention,
       input_tokens, cache_read_tokens, output_tokens, output_tokens_unsure,
       rate_input * 1000000 AS input_usd_per_mtok,
       rate_read * 1000000 AS cache_read_usd_per_mtok,
       rate_write * 1000000 AS cache_write_usd_per_mtok,
       rate_output * 1000000 AS output_usd_per_mtok,
       cache_read_usd, uncached_input_usd, written_input_usd, output_usd, output_unsure_usd,
       least(no_writes_usd, all_written_usd) AS cost_usd_low,
       greatest(no_writes_usd, all_written_usd) AS cost_usd_high,
       CASE WHEN prompt_tokens IS NULL AND kind = 'failed' THEN 'failed'
            WHEN rate_input IS NULL THEN 'unknown'
            WHEN prompt_tokens IS NULL THEN 'estimated'
            WHEN model_inferred THEN 'inferred'
            WHEN no_writes_usd <> all_written_usd THEN 'range'
            ELSE 'priced' END AS cost_source,
       unknown_reason
FROM bounds
ORDER BY app_name, user_id, session_id, call_index;
