-- name: traced_calls
-- The traced requests of the selected sessions (traces name the session id only), with their parts' sizes by role.
-- params: $session
SELECT t.session_id, t.event_id, t.started_at, t.model, t.adk_version, t.input_tokens, t.system_chars,
       t.tools_chars, t.contents,
       coalesce(sum(p.chars), 0)::BIGINT AS chars,
       coalesce(sum(p.chars) FILTER (WHERE p.role = 'user'), 0)::BIGINT AS chars_user,
       coalesce(sum(p.chars) FILTER (WHERE p.role = 'model'), 0)::BIGINT AS chars_model,
       coalesce(sum(p.chars) FILTER (WHERE p.role = 'tool'), 0)::BIGINT AS chars_tool,
       list(p.tool_name ORDER BY p.tool_name) FILTER (WHERE p.kind = 'function_response')
           AS function_responses
FROM traced_calls AS t
LEFT JOIN traced_parts AS p USING (session_id, event_id)
WHERE ($session IS NULL OR t.session_id = $session)
GROUP BY ALL
ORDER BY t.session_id, t.started_at, t.event_id;
