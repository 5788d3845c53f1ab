-- name: calls
-- Per model call of the sessions in `scope_sessions`, in the time of `cost_window` (a failed request without usage is not billed; a summarizer without a model is priced as its session's main model): its usage as the provider bills it (the convention `cost_models` names for its model), and its cost at the rates of `cost_rates` (USD per token, by model and UTC day; the one tier its input reaches) under a low and a high bound, each split into cache reads, uncached input, cache writes, output and request fees that sum to it; a response a Claude Code transcript copied from another session (a resumed session's history) is not billed again (`cost_transcript_copies`); where a Claude Code transcript measured the request's writes (`cost_transcript_writes`: 5-minute and 1-hour, each at its rate) or a LiteLLM payload or a span logged them (`cost_logged_writes`), they are known and both bounds use them; a call without usage whose session's ADK release is not known, where its rule sets rebuild its window differently, is estimated at the lowest and, as the high bound's reading (`input_tokens_unsure`), the highest of them.
-- params: (none)
WITH usage AS (
    SELECT c.app_name, c.user_id, c.session_id, c.call_id, c.call_index, c.turn,
           -- a compaction's summarizer is named so (its event's author is 'user', who
           -- makes no model call), as the calls name it (facts/calls.sql)
           c.invocation_id,
           CASE WHEN c.kind = 'summarizer' THEN 'summarizer' ELSE c.author END AS agent,
           c.kind, c.epoch,
           -- a compaction event names no model: its summarizer is the session's main model;
           -- a fast request (Claude Code's `speed: fast`) is priced as `<model> (fast)`
           coalesce(c.model_version, CASE WHEN c.kind = 'summarizer' THEN s.main_model END, '')
               || CASE WHEN t.speed = 'fast' THEN ' (fast)' ELSE '' END AS model,
           c.model_version IS NULL AND c.kind = 'summarizer' AND s.main_model <> ''
               AS model_inferred,
           -- ADK before 2.7 stored only a native Claude call's uncached input as its prompt
           regexp_matches(s.rules, 'google-adk (0|1|2\.[0-6])\.') AS before_2_7,
           DATE '1970-01-01' + CAST(floor(c.epoch / 86400) AS INTEGER) AS day,
           -- a copy of another session's response (a resumed session's history) is billed
           -- in that session only: none of its usage here
           d.original_session AS copied_from,
           CASE WHEN d.call_id IS NULL THEN c.prompt_tokens ELSE 0 END AS prompt_tokens,
           CASE WHEN d.call_id IS NULL THEN c.cached_tokens ELSE 0 END AS cached_tokens,
           CASE WHEN d.call_id IS NULL THEN e.candidates_tokens ELSE 0 END AS candidates_tokens,
           CASE WHEN d.call_id IS NULL THEN e.thoughts_tokens ELSE 0 END AS thoughts_tokens,
           -- a response that kept only its streaming placeholder output (Claude Code 2.1
           -- left out its final usage line): what its content holds beyond it, estimated
           CASE WHEN t.output_placeholder AND d.call_id IS NULL THEN greatest(
               CAST(round_even(e.chars / r.chars_per_token, 0) AS BIGINT)
               - coalesce(e.candidates_tokens, 0), 0) ELSE 0 END AS placeholder_output,
           e.tool_use_prompt_tokens,
           -- writes a Claude Code transcript measured, else a logged record's
           CASE WHEN d.call_id IS NOT NULL THEN 0
                ELSE coalesce(t.cache_write_tokens, w.cache_write_tokens) END AS logged_writes,
           CASE WHEN t.cache_write_tokens IS NOT NULL THEN t.cache_write_1h_tokens ELSE 0 END
               AS logged_writes_1h,
           CASE WHEN t.cache_write_tokens IS NOT NULL THEN 'transcript (measured)'
                ELSE w.logged_match END AS logged_match,
           -- no usage: the window's characters over the ratio, and as the turns do, the
           -- system instruction and tools (traced) or the agent's fitted constant
           CASE WHEN c.prompt_tokens IS NULL THEN CAST(
               round_even((c.chars_user + c.chars_model + c.chars_tool + c.chars_summary)
                          / r.chars_per_token, 0)
               + coalesce(round_even(c.system_tools_chars / r.chars_per_token, 0),
                          round_even(k.constant, 0), 0) AS BIGINT) END AS estimated_input,
           -- where the session's ADK release is not known and its rule sets rebuild the
           -- window differently (facts/calls.sql): the lowest and highest such estimate
           CASE WHEN c.prompt_tokens IS NULL AND c.chars_low IS NOT NULL THEN CAST(
               round_even(c.chars_low / r.chars_per_token, 0)
               + coalesce(round_even(c.system_tools_chars / r.chars_per_token, 0),
                          round_even(k.constant, 0), 0) AS BIGINT) END AS estimated_input_low,
           CASE WHEN c.prompt_tokens IS NULL AND c.chars_low IS NOT NULL THEN CAST(
               round_even(c.chars_high / r.chars_per_token, 0)
               + coalesce(round_even(c.system_tools_chars / r.chars_per_token, 0),
                          round_even(k.constant, 0), 0) AS BIGINT) END AS estimated_input_high
    FROM fact_calls AS c
    SEMI JOIN scope_sessions AS o USING (app_name, user_id, session_id)
    JOIN fact_sessions AS s USING (app_name, user_id, session_id)
    JOIN events AS e
        ON e.app_name = c.app_name AND e.user_id = c.user_id
       AND e.session_id = c.session_id AND e.event_id = c.call_id
    JOIN scope_ratios AS r ON r.model = c.model
    LEFT JOIN scope_constants AS k
        ON k.model = c.model AND k.app_name = c.app_name AND k.agent = coalesce(c.author, '')
    LEFT JOIN cost_logged_writes AS w
        ON w.app_name = c.app_name AND w.user_id = c.user_id AND w.session_id = c.session_id
       AND w.call_id = c.call_id
    LEFT JOIN cost_transcript_writes AS t
        ON t.app_name = c.app_name AND t.user_id = c.user_id AND t.session_id = c.session_id
       AND t.call_id = c.call_id
    LEFT JOIN cost_transcript_copies AS d
        ON d.app_name = c.app_name AND d.user_id = c.user_id AND d.session_id = c.session_id
       AND d.call_id = c.call_id
    WHERE c.epoch >= coalesce((SELECT since FROM cost_window), '-infinity'::DOUBLE)
      AND c.epoch < coalesce((SELECT until FROM cost_window), 'infinity'::DOUBLE)
), billed AS (
    SELECT u.*, coalesce(m.convention, 'other') AS convention,
           CASE WHEN u.prompt_tokens IS NULL AND u.kind = 'failed' THEN 0
                WHEN u.prompt_tokens IS NULL THEN coalesce(u.estimated_input_low,
                                                           u.estimated_input)
                WHEN m.convention = 'gemini'
                    THEN u.prompt_tokens + coalesce(u.tool_use_prompt_tokens, 0)
                ELSE u.prompt_tokens END AS input_tokens,
           coalesce(u.candidates_tokens, 0)
               + CASE WHEN m.convention = 'gemini' THEN coalesce(u.thoughts_tokens, 0) ELSE 0 END
               AS output_tokens,
           -- ADK's native Claude path excludes thinking from candidates, LiteLLM's includes
           -- it; a placeholder output count is low by what the response's content holds
           CASE WHEN m.convention = 'claude' THEN coalesce(u.thoughts_tokens, 0) ELSE 0 END
               + u.placeholder_output AS output_tokens_unsure,
           m.convention = 'claude' AND u.before_2_7 AND u.prompt_tokens IS NOT NULL
               AS two_readings
    FROM usage AS u
    LEFT JOIN cost_models AS m USING (model)
), readings AS (
    -- one reading of the counts (LiteLLM's, or ADK's own from 2.7: reads inside the
    -- prompt), and for a Claude call of ADK before 2.7 a second one (its native path:
    -- the prompt is the uncached input, reads beside it)
    SELECT *,
           least(coalesce(cached_tokens, 0), input_tokens) AS cache_read_tokens,
           CASE WHEN two_readings THEN coalesce(cached_tokens, 0)
                ELSE least(coalesce(cached_tokens, 0), input_tokens) END AS read_n,
           -- (an estimate over an unknown release's rule sets: the lowest, and the
           -- highest as the second reading)
           CASE WHEN two_readings THEN input_tokens + coalesce(cached_tokens, 0)
                WHEN prompt_tokens IS NULL AND kind <> 'failed'
                    THEN coalesce(estimated_input_high, input_tokens)
                ELSE input_tokens END AS input_n,
           -- logged by LiteLLM: its reading, and the writes it counted (at most the input)
           CASE WHEN logged_writes IS NOT NULL THEN least(
               logged_writes, input_tokens - least(coalesce(cached_tokens, 0), input_tokens))
           END AS writes_known,  -- least() skips nulls: the CASE keeps an unknown unknown
           -- of them, those written for an hour (a Claude Code transcript's split)
           CASE WHEN logged_writes IS NOT NULL THEN least(logged_writes_1h, least(
               logged_writes, input_tokens - least(coalesce(cached_tokens, 0), input_tokens)))
           END AS writes_1h_known
    FROM billed
), priced AS (
    SELECT b.*, r.above AS tier_above, r.input AS rate_input, r.cache_read AS rate_read,
           r.cache_write AS rate_write, r.cache_write_1h AS rate_write_1h,
           r.output AS rate_output, r.request AS rate_request,
           r.source AS price_source, r.provider, r.price_model, x.reason AS unknown_reason,
           -- the second reading's own tier (its input may reach a dearer one)
           h.input AS rate_input_n, h.cache_read AS rate_read_n,
           h.cache_write AS rate_write_n, h.output AS rate_output_n
    FROM readings AS b
    LEFT JOIN cost_rates AS r  -- the one tier the input reaches (above < input <= next)
        ON r.model = b.model AND r.day = b.day
       AND (r.above = 0 OR b.input_tokens > r.above)
       AND (r.next_above IS NULL OR b.input_tokens <= r.next_above)
    LEFT JOIN cost_rates AS h
        ON h.model = b.model AND h.day = b.day
       AND (h.above = 0 OR b.input_n > h.above)
       AND (h.next_above IS NULL OR b.input_n <= h.next_above)
    LEFT JOIN cost_unknown AS x ON x.model = b.model AND x.day = b.day
), parts AS (
    -- per reading: its reads, and its uncached input at the input and at the write rate
    -- (ADK stores no writes: none, or every uncached token, were written)
    SELECT *,
           cache_read_tokens * rate_read AS reads_l,
           (input_tokens - cache_read_tokens) * rate_input AS unwritten_l,
           (input_tokens - cache_read_tokens) * rate_write AS written_l,
           read_n * rate_read_n AS reads_n,
           (input_n - read_n) * rate_input_n AS unwritten_n,
           (input_n - read_n) * rate_write_n AS written_n,
           CASE WHEN kind = 'failed' AND prompt_tokens IS NULL THEN 0 * rate_request
                ELSE rate_request END AS request_usd,
           (input_tokens - cache_read_tokens - writes_known) * rate_input AS unwritten_k,
           (writes_known - writes_1h_known) * rate_write
               + writes_1h_known * rate_write_1h AS written_k
    FROM priced
), bounds AS (
    -- each bound the cheaper (dearer) reading, with writes where they cost less (more)
    SELECT *,
           reads_l + least(unwritten_l, written_l) <= reads_n + least(unwritten_n, written_n)
               AS low_l,
           reads_l + greatest(unwritten_l, written_l)
               >= reads_n + greatest(unwritten_n, written_n) AS high_l
    FROM parts
), components AS (
    SELECT *,
           CASE WHEN writes_known IS NOT NULL OR low_l THEN reads_l ELSE reads_n END
               AS cache_read_usd_low,
           CASE WHEN writes_known IS NOT NULL THEN unwritten_k
                WHEN rate_write < rate_input THEN 0 * rate_input
                WHEN low_l THEN unwritten_l ELSE unwritten_n END AS uncached_input_usd_low,
           CASE WHEN writes_known IS NOT NULL THEN written_k
                WHEN rate_write >= rate_input THEN 0 * rate_input
                WHEN low_l THEN written_l ELSE written_n END AS cache_write_usd_low,
           -- output at the cheaper (dearer) of the two readings' tiers
           output_tokens * least(rate_output, rate_output_n) AS output_usd_low,
           CASE WHEN writes_known IS NOT NULL OR high_l THEN reads_l ELSE reads_n END
               AS cache_read_usd_high,
           CASE WHEN writes_known IS NOT NULL THEN unwritten_k
                WHEN rate_write > rate_input THEN 0 * rate_input
                WHEN high_l THEN unwritten_l ELSE unwritten_n END AS uncached_input_usd_high,
           -- at equal rates (a list with no write surcharge) a write is uncached input
           CASE WHEN writes_known IS NOT NULL THEN written_k
                WHEN rate_write <= rate_input THEN 0 * rate_input
                WHEN high_l THEN written_l ELSE written_n END AS cache_write_usd_high,
           (output_tokens + output_tokens_unsure) * greatest(rate_output, rate_output_n)
               AS output_usd_high
    FROM bounds
)
SELECT app_name, user_id, session_id, call_id, call_index, turn, invocation_id, agent, kind,
       epoch AS started_at, day, model, provider, price_model, price_source, tier_above,
       convention AS usage_convention,
       input_tokens, cache_read_tokens, output_tokens,
       CASE WHEN writes_known IS NULL THEN input_n - input_tokens ELSE 0 END
           AS input_tokens_unsure,
       output_tokens_unsure,
       -- a failed request without usage wrote nothing
       CASE WHEN kind = 'failed' AND prompt_tokens IS NULL THEN 0 ELSE writes_known END
           AS cache_write_tokens,
       CASE WHEN writes_known IS NOT NULL THEN writes_1h_known END AS cache_write_1h_tokens,
       CASE WHEN writes_known IS NOT NULL THEN logged_match END AS cache_write_source,
       rate_input * 1000000 AS input_usd_per_mtok,
       rate_read * 1000000 AS cache_read_usd_per_mtok,
       rate_write * 1000000 AS cache_write_usd_per_mtok,
       rate_write_1h * 1000000 AS cache_write_1h_usd_per_mtok,
       rate_output * 1000000 AS output_usd_per_mtok,
       cache_read_usd_low, uncached_input_usd_low, cache_write_usd_low, output_usd_low,
       cache_read_usd_high, uncached_input_usd_high, cache_write_usd_high, output_usd_high,
       request_usd,
       cache_read_usd_low + uncached_input_usd_low + cache_write_usd_low + output_usd_low
           + request_usd AS cost_usd_low,
       cache_read_usd_high + uncached_input_usd_high + cache_write_usd_high + output_usd_high
           + request_usd AS cost_usd_high,
       CASE WHEN copied_from IS NOT NULL THEN 'copied'
            WHEN prompt_tokens IS NULL AND kind = 'failed' THEN 'failed'
            WHEN rate_input IS NULL THEN 'unknown'
            WHEN prompt_tokens IS NULL THEN 'estimated'
            WHEN model_inferred THEN 'inferred'
            WHEN cache_read_usd_low + uncached_input_usd_low + cache_write_usd_low
                     + output_usd_low
                 <> cache_read_usd_high + uncached_input_usd_high + cache_write_usd_high
                     + output_usd_high THEN 'range'
            ELSE 'priced' END AS cost_source,
       unknown_reason, copied_from
FROM components
ORDER BY app_name, user_id, session_id, call_index;
