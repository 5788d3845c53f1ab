-- name: outcomes
-- Every loaded task outcome: its execution (session, and invocation or ''), task, arm, success and score.
-- params: (none)
SELECT session_id, invocation_id, task_id, arm, success, score, source, locator
FROM outcomes
ORDER BY task_id, arm, session_id, invocation_id;
