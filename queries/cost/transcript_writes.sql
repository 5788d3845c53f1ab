-- name: transcript_writes
-- Per model call of the sessions in `scope_sessions` that a Claude Code transcript recorded: its cache writes as billed (cache_creation_input_tokens, else the sum of its 5-minute and 1-hour split) how many of them were 1-hour writes (measured), its speed (`fast`: Claude's fast mode), and whether its output count is a streaming placeholder (2.1+: no line held the final usage).
-- params: (none)
SELECT t.app_name, t.user_id, t.session_id, t.event_id AS call_id,
       coalesce(t.cache_creation_tokens,
                t.cache_write_5m_tokens + t.cache_write_1h_tokens) AS cache_write_tokens,
       -- the split, where the line has one; a recorded count above the split's sum (never
       -- seen) is written at the 5-minute rate
       least(coalesce(t.cache_write_1h_tokens, 0),
             coalesce(t.cache_creation_tokens, t.cache_write_1h_tokens, 0))
           AS cache_write_1h_tokens,
       t.speed, t.output_placeholder
FROM transcript_events AS t
SEMI JOIN scope_sessions AS o USING (app_name, user_id, session_id)
WHERE t.kind = 'call';
