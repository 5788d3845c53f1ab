-- name: anchors
-- The anchors of the tool results of the selection's sessions (store schema 12; $tool: only that tool's results'): where in each result they are, and the lines that hold them, for forensics/whatif/anchors.py.
-- params: $tool
SELECT a.app_name, a.user_id, a.session_id, a.function_call_id, a.anchor_index,
       a.result_bytes, a.key_starts, a.key_ends, a.line_starts, a.line_ends
FROM anchors AS a
SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
WHERE $tool IS NULL OR a.tool_name = $tool
ORDER BY a.app_name, a.user_id, a.session_id, a.function_call_id, a.anchor_index;
