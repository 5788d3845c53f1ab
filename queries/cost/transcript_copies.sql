-- name: transcript_copies
-- Per model call of the sessions in `scope_sessions` that is a copy of another session's: a response (message and request id) a Claude Code transcript also holds in another session of the same user (a resumed or forked session copies the conversation it continues, ids and usage included; the same files read for two users are two users' bills). The provider billed it once: in the session it was first part of, the one whose conversation ended first (its last event earliest; then by key); every other holder's is a copy.
-- params: (none)
WITH lasts AS (
    SELECT app_name, user_id, session_id, max(epoch) AS last_epoch
    FROM events
    GROUP BY ALL
), holders AS (
    SELECT t.app_name, t.user_id, t.session_id, t.event_id, t.message_id, t.request_id,
           row_number() OVER (PARTITION BY t.user_id, t.message_id, t.request_id
                              ORDER BY l.last_epoch, t.app_name, t.user_id, t.session_id)
               AS rank
    FROM transcript_events AS t
    JOIN lasts AS l USING (app_name, user_id, session_id)
    WHERE t.kind = 'call' AND t.message_id IS NOT NULL AND t.request_id IS NOT NULL
      AND (t.user_id, t.message_id, t.request_id) IN (
          SELECT (user_id, message_id, request_id) FROM transcript_events
          WHERE kind = 'call' AND message_id IS NOT NULL AND request_id IS NOT NULL
          GROUP BY ALL HAVING count(*) > 1)
)
SELECT c.app_name, c.user_id, c.session_id, c.event_id AS call_id,
       o.session_id AS original_session
FROM holders AS c
SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
JOIN holders AS o
    ON o.user_id = c.user_id AND o.message_id = c.message_id AND o.request_id = c.request_id
   AND o.rank = 1
WHERE c.rank > 1;
