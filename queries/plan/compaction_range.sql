-- name: compaction_range
-- Plan check: count a session's raw events inside one time range (a compaction range).
-- params: $app_name, $user_id, $session_id, $since, $until
SELECT count(*)
FROM events
WHERE app_name = $app_name AND user_id = $user_id AND session_id = $session_id
  AND "timestamp" >= $since AND "timestamp" < $until
