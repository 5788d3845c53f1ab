-- name: result_preview
-- The stored preview of one tool call's result (its first 2,000 characters).
-- params: $app, $user, $session, $function_call_id
SELECT preview
FROM parts
WHERE app_name = $app AND user_id = $user AND session_id = $session
  AND function_call_id = $function_call_id AND kind = 'function_response'
LIMIT 1;
