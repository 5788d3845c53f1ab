-- name: transcript_copies
-- Per model call of the sessions in `scope_sessions` that is a copy of another session's: a response (message and request id) a Claude Code transcript also holds in a session of a smaller key (a resumed or forked session copies the conversation it continues, ids and usage included); the provider billed it once, so it is billed there only.
-- params: (none)
SELECT t.app_name, t.user_id, t.session_id, t.event_id AS call_id,
       min(o.session_id) AS original_session
FROM transcript_events AS t
SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
JOIN transcript_events AS o
    ON o.message_id = t.message_id AND o.request_id = t.request_id AND o.kind = 'call'
   AND (o.app_name, o.user_id, o.session_id) < (t.app_name, t.user_id, t.session_id)
WHERE t.kind = 'call' AND t.message_id IS NOT NULL AND t.request_id IS NOT NULL
GROUP BY ALL;
