-- name: delete_facts
-- Remove the stored facts of the sessions in `batch_keys` (before their new facts are written).
-- params: (none)
DELETE FROM fact_sessions AS f USING batch_keys AS k
WHERE f.app_name = k.app_name AND f.user_id = k.user_id AND f.session_id = k.session_id;
DELETE FROM fact_calls AS f USING batch_keys AS k
WHERE f.app_name = k.app_name AND f.user_id = k.user_id AND f.session_id = k.session_id;
DELETE FROM fact_carried AS f USING batch_keys AS k
WHERE f.app_name = k.app_name AND f.user_id = k.user_id AND f.session_id = k.session_id;
DELETE FROM fact_tool_calls AS f USING batch_keys AS k
WHERE f.app_name = k.app_name AND f.user_id = k.user_id AND f.session_id = k.session_id;
DELETE FROM fact_turns AS f USING batch_keys AS k
WHERE f.app_name = k.app_name AND f.user_id = k.user_id AND f.session_id = k.session_id;
DELETE FROM fact_compactions AS f USING batch_keys AS k
WHERE f.app_name = k.app_name AND f.user_id = k.user_id AND f.session_id = k.session_id;
