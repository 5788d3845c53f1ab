-- name: cache_calls
-- Per model call of `cost_calls` (at all times) with measured usage, in the time of `cache_window`: its prompt split into cache reads, cache writes (5-minute and 1-hour, where a record measured them) and uncached input; its hit rate; what its reads saved against the uncached price, net of the writes' surcharge; and whether the cached prefix broke: its reads at least `cache_rules`' min_tokens, and its min_share of the prefix, below what the previous call of its thread left cached, with what re-sending those tokens cost instead of reading them, and the cause the records show; and its writes no later call of its thread read, with what writing them cost above sending them uncached.
-- params: (none)
-- A thread is one agent's requests in one session and branch (a Claude Code subagent's
-- sidechain, an ADK agent's own requests): each sends its own system prompt first, so
-- only its own previous request's prefix can be read again. That prefix is the previous
-- call's reads plus writes where its writes are known (what it left cached), else its
-- whole prompt (an implicit cache, Gemini's, keeps any prefix), never more than this
-- call's prompt. Causes, first that applies: `compaction` (a compaction event was
-- appended between the two calls: measured), `model` (another model: each model has
-- its own cache: measured), `system` / `tools` (ADK's traces of both requests hold a
-- different system instruction / tool declarations: traced), `history` (the previous
-- traced request's contents are not where this one's begin: traced), `ttl` (the calls are
-- further apart than the cache lives,
-- 5 minutes, or an hour where the thread's last write was for an hour: inferred from the
-- measured times, which are when each response was stored), else `unexplained`.
-- Calls without usage (estimated), failed requests without usage and responses copied
-- from another session have no cache figures and are left out.
WITH branches AS (
    -- (most events have none: a small side to join every call to)
    SELECT app_name, user_id, session_id, event_id AS call_id, branch
    FROM events
    WHERE branch IS NOT NULL
), compactions AS (
    -- each session's compaction times (few: a small side to join every call to)
    SELECT app_name, user_id, session_id, list(appended_at) AS appended
    FROM fact_compactions
    GROUP BY ALL
), traced_contents AS (
    -- each traced request's contents as sent, part by part (position, role, kind, size)
    SELECT session_id, event_id,
           list({'content': content_index, 'part': part_index, 'role': role, 'kind': kind,
                 'chars': chars} ORDER BY content_index, part_index) AS contents
    FROM traced_parts
    GROUP BY ALL
), calls AS (
    SELECT c.app_name, c.user_id, c.session_id, c.call_id, c.call_index, c.turn,
           c.invocation_id, c.agent, c.started_at, c.day, c.model, c.input_tokens,
           c.cache_read_tokens, c.cache_write_tokens, c.cache_write_1h_tokens,
           c.cache_write_source, c.uncached_input_usd_low, c.uncached_input_usd_high,
           c.cache_write_usd_low, c.cache_write_usd_high, c.cost_source, c.price_source,
           o.ordinal AS session_ordinal, coalesce(b.branch, '') AS branch,
           -- the thread: a Claude Code compaction's summarizer (agent-acompact-*) is sent
           -- the main conversation with its instruction after it, so it reads the main
           -- thread's prefix, and the main thread's next call follows it
           CASE WHEN c.kind = 'summarizer' AND b.branch LIKE 'agent-acompact%' THEN ''
                ELSE coalesce(b.branch, '') END AS thread_branch,
           CASE WHEN c.kind = 'summarizer' AND b.branch LIKE 'agent-acompact%' THEN 'main'
                ELSE c.agent END AS thread_agent,
           -- the compactions appended by the call's time
           coalesce(len(list_filter(k.appended, lambda t: t <= c.started_at)), 0) AS compactions,
           -- what the traced request sent before its contents (schema 11 on: a request
           -- without tools has none), and their first characters
           t.system_sha256 AS system_key, t.system_head,
           CASE WHEN t.system_sha256 IS NOT NULL THEN coalesce(t.tools_sha256, '') END
               AS tools_key,
           coalesce(t.tools_head, '') AS tools_head,
           CASE WHEN t.event_id IS NOT NULL THEN coalesce(h.contents, []) END AS contents,
           -- the per-token rates (calls.sql gives them per million tokens, exactly)
           CAST(c.input_usd_per_mtok * 0.000001 AS DECIMAL(38, 18)) AS rate_input,
           CAST(c.cache_read_usd_per_mtok * 0.000001 AS DECIMAL(38, 18)) AS rate_read,
           CAST(coalesce(c.cache_write_usd_per_mtok, c.input_usd_per_mtok) * 0.000001
                AS DECIMAL(38, 18)) AS rate_write,
           CAST(coalesce(c.cache_write_1h_usd_per_mtok, c.cache_write_usd_per_mtok,
                         c.input_usd_per_mtok) * 0.000001 AS DECIMAL(38, 18)) AS rate_write_1h,
           c.input_tokens - c.cache_read_tokens AS not_read
    FROM cost_calls AS c
    JOIN scope_sessions AS o USING (app_name, user_id, session_id)
    LEFT JOIN branches AS b
        ON b.app_name = c.app_name AND b.user_id = c.user_id AND b.session_id = c.session_id
       AND b.call_id = c.call_id
    LEFT JOIN compactions AS k
        ON k.app_name = c.app_name AND k.user_id = c.user_id AND k.session_id = c.session_id
    -- the traced request, where ADK's trace of it was loaded (traces name the session id)
    LEFT JOIN traced_calls AS t ON t.session_id = c.session_id AND t.event_id = c.call_id
    LEFT JOIN traced_contents AS h ON h.session_id = c.session_id AND h.event_id = c.call_id
    WHERE c.cost_source NOT IN ('estimated', 'failed', 'copied')
), threaded AS (
    SELECT *,
           lag(call_id) OVER w AS previous_call_id,
           lag(started_at) OVER w AS previous_at,
           lag(model) OVER w AS previous_model,
           lag(CASE WHEN cache_write_tokens IS NOT NULL
                    THEN cache_read_tokens + cache_write_tokens ELSE input_tokens END) OVER w
               AS previous_prefix,
           -- whether the thread's last write before this call was for an hour: the
           -- prefix it reads lives as long as that write (a read keeps it; a call that
           -- wrote nothing leaves the lifetime as it was)
           last_value(CASE WHEN cache_write_tokens > 0 THEN cache_write_1h_tokens > 0 END
                      IGNORE NULLS) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
               AS previous_write_1h,
           -- a compaction appended between the previous call and this one
           compactions > lag(compactions) OVER w AS compacted,
           lag(system_key) OVER w AS previous_system_key,
           lag(system_head) OVER w AS previous_system_head,
           lag(tools_key) OVER w AS previous_tools_key,
           lag(tools_head) OVER w AS previous_tools_head,
           lag(contents) OVER w AS previous_contents,
           lead(started_at) OVER w AS next_at,
           lead(model) OVER w AS next_model,
           lead(cache_read_tokens) OVER w AS next_read
    FROM calls
    WINDOW w AS (PARTITION BY session_ordinal, thread_branch, thread_agent ORDER BY call_index)
), judged AS (
    SELECT *,
           -- (least() passes over a null: a thread's first call has no prefix to read)
           CASE WHEN previous_call_id IS NOT NULL THEN least(previous_prefix, input_tokens)
           END AS prefix_tokens,
           CASE WHEN previous_call_id IS NOT NULL THEN
               greatest(least(previous_prefix, input_tokens) - cache_read_tokens, 0)
           END AS shortfall,
           started_at - previous_at AS gap_s,
           CASE WHEN previous_write_1h THEN 3600 ELSE 300 END AS lifetime_s,
           -- the rate of this call's writes: one lifetime's, or both's cheaper and dearer
           CASE WHEN coalesce(cache_write_1h_tokens, 0) = 0 THEN rate_write
                WHEN cache_write_1h_tokens = cache_write_tokens THEN rate_write_1h
                ELSE least(rate_write, rate_write_1h) END AS write_low,
           CASE WHEN coalesce(cache_write_1h_tokens, 0) = 0 THEN rate_write
                WHEN cache_write_1h_tokens = cache_write_tokens THEN rate_write_1h
                ELSE greatest(rate_write, rate_write_1h) END AS write_high,
           coalesce(shortfall > 0 AND shortfall >= r.min_tokens
                    AND shortfall >= r.min_share * prefix_tokens, false) AS is_break,
           coalesce(system_key <> previous_system_key, false) AS system_changed,
           coalesce(tools_key <> previous_tools_key, false) AS tools_changed,
           -- the previous request's contents are not where this one's begin: an earlier
           -- message or tool result was rewritten or removed (both traced)
           coalesce(list_slice(contents, 1, len(previous_contents)) <> previous_contents,
                    false) AS history_changed,
           -- the two texts that changed, first the system instruction's
           CASE WHEN system_changed THEN previous_system_head
                WHEN tools_changed THEN previous_tools_head END AS changed_before,
           CASE WHEN system_changed THEN system_head
                WHEN tools_changed THEN tools_head END AS changed_now,
           -- this call's writes no later call of its thread read: the next one read less
           -- than this call's reads and writes, or used another model, or came after they
           -- lived; or there is none
           CASE WHEN cache_write_tokens IS NULL THEN NULL
                WHEN next_at IS NULL OR next_model <> model
                     OR next_at - started_at > CASE WHEN coalesce(cache_write_1h_tokens, 0) > 0
                                                    THEN 3600 ELSE 300 END
                    THEN cache_write_tokens
                ELSE least(cache_write_tokens,
                           greatest(cache_read_tokens + cache_write_tokens - next_read, 0))
           END AS unread_write_tokens
    FROM threaded, cache_rules AS r
), located AS (
    SELECT *,
           CASE WHEN is_break AND (system_changed OR tools_changed) THEN list_position(
               list_transform(list_zip(string_split(changed_before, ''),
                                       string_split(changed_now, '')),
                              lambda p: p[1] IS NOT DISTINCT FROM p[2]),
               false) END AS changed_at
           , CASE WHEN is_break AND history_changed THEN list_position(
               list_transform(list_zip(previous_contents, contents),
                              lambda p: p[1] IS NOT DISTINCT FROM p[2]),
               false) END AS rewritten_at
    FROM judged
)
SELECT app_name, user_id, session_id, call_id, call_index, turn, invocation_id, agent,
       nullif(branch, '') AS branch, started_at, day, model,
       input_tokens AS prompt_tokens, cache_read_tokens, cache_write_tokens,
       cache_write_tokens - cache_write_1h_tokens AS cache_write_5m_tokens,
       cache_write_1h_tokens,
       not_read - cache_write_tokens AS uncached_tokens,
       CASE WHEN input_tokens > 0 THEN cache_read_tokens / input_tokens END AS hit_rate,
       cache_write_source,
       cache_read_tokens * (rate_input - rate_read) AS saved_usd,
       -- what the unread tokens cost above the uncached price (writes' surcharge), per bound
       uncached_input_usd_low + cache_write_usd_low - not_read * rate_input
           AS write_premium_usd_low,
       uncached_input_usd_high + cache_write_usd_high - not_read * rate_input
           AS write_premium_usd_high,
       unread_write_tokens,
       -- what writing them cost above sending them uncached: paid for no read
       unread_write_tokens * (write_low - rate_input) AS unread_write_usd_low,
       unread_write_tokens * (write_high - rate_input) AS unread_write_usd_high,
       previous_call_id, gap_s, prefix_tokens,
       is_break,
       CASE WHEN is_break THEN shortfall END AS break_tokens,
       -- the tokens that were not read, written (where the writes are known: at the write
       -- rate of their lifetime; both lifetimes written, the cheaper and the dearer) or
       -- sent uncached instead; writes unknown: the cheaper and the dearer of the two
       CASE WHEN is_break THEN
           least(shortfall, coalesce(cache_write_tokens, 0)) * (write_low - rate_read)
           + (shortfall - least(shortfall, coalesce(cache_write_tokens, 0)))
             * (CASE WHEN cache_write_tokens IS NULL THEN least(rate_input, rate_write)
                     ELSE rate_input END - rate_read)
       END AS break_cost_usd_low,
       CASE WHEN is_break THEN
           least(shortfall, coalesce(cache_write_tokens, 0)) * (write_high - rate_read)
           + (shortfall - least(shortfall, coalesce(cache_write_tokens, 0)))
             * (CASE WHEN cache_write_tokens IS NULL THEN greatest(rate_input, rate_write)
                     ELSE rate_input END - rate_read)
       END AS break_cost_usd_high,
       CASE WHEN NOT is_break THEN NULL
            WHEN compacted THEN 'compaction'
            WHEN previous_model <> model THEN 'model'
            WHEN system_changed THEN 'system'
            WHEN tools_changed THEN 'tools'
            WHEN history_changed THEN 'history'
            WHEN gap_s > lifetime_s THEN 'ttl'
            ELSE 'unexplained' END AS cause,
       CASE WHEN NOT is_break THEN NULL
            WHEN compacted OR previous_model <> model THEN 'measured'
            WHEN system_changed OR tools_changed OR history_changed THEN 'traced'
            WHEN gap_s > lifetime_s THEN 'inferred'
       END AS cause_source,
       -- where the traced system instruction (or tool declarations) first differ: the
       -- character, and 50 characters around it before and now (of the first 2,000 kept;
       -- a line break written \n)
       CASE WHEN cause IN ('system', 'tools') THEN
           CASE cause WHEN 'system' THEN 'system instruction differs'
                      ELSE 'tool declarations differ' END
           || coalesce(
               ' from character ' || changed_at || ': "'
               || replace(replace(substr(changed_before, greatest(changed_at - 20, 1), 50),
                                  chr(13), '\r'), chr(10), '\n')
               || '" before, "'
               || replace(replace(substr(changed_now, greatest(changed_at - 20, 1), 50),
                                  chr(13), '\r'), chr(10), '\n')
               || '" now',
               ' after the first 2,000 characters')
           -- the first part of the previous request that this one does not send as it was
           WHEN cause = 'history' THEN 'contents rewritten from content '
               || previous_contents[rewritten_at].content || ' part '
               || previous_contents[rewritten_at].part || ': '
               || previous_contents[rewritten_at].role || ' '
               || previous_contents[rewritten_at].kind || ' of '
               || previous_contents[rewritten_at].chars || ' characters before, '
               || coalesce(contents[rewritten_at].role || ' ' || contents[rewritten_at].kind
                           || ' of ' || contents[rewritten_at].chars || ' characters now',
                           'nothing there now')
       END AS cause_detail,
       cost_source, price_source
FROM located
-- a thread's previous call counts wherever it falls; the rows are those of the time asked
WHERE started_at >= coalesce((SELECT since FROM cache_window), '-infinity'::DOUBLE)
  AND started_at < coalesce((SELECT until FROM cache_window), 'infinity'::DOUBLE)
ORDER BY app_name, user_id, session_id, call_index;
