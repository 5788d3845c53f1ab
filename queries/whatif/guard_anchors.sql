-- name: guard_anchors
-- Per (app, tool) of the selection's tool results: how many carry anchors (strings a later call reproduced from them, store schema 12) and how many anchors in all; null where none of the tool's results is of a session searched for them.
-- params: (none)
WITH searched AS (
    SELECT app_name, user_id, session_id
    FROM anchor_sessions
    SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
), tools AS (
    SELECT g.app_name, g.tool_name, count(s.session_id) AS searched_results
    FROM fact_tool_calls AS g
    SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
    LEFT JOIN searched AS s USING (app_name, user_id, session_id)
    GROUP BY g.app_name, g.tool_name
), found AS (
    SELECT app_name, tool_name,
           count(DISTINCT (user_id, session_id, function_call_id)) AS anchored_results,
           count(*) AS anchors
    FROM anchors
    SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
    GROUP BY app_name, tool_name
)
SELECT t.app_name, t.tool_name,
       CASE WHEN t.searched_results > 0 THEN coalesce(f.anchored_results, 0) END
           AS anchored_results,
       CASE WHEN t.searched_results > 0 THEN coalesce(f.anchors, 0) END AS anchors
FROM tools AS t
LEFT JOIN found AS f ON f.app_name = t.app_name AND f.tool_name IS NOT DISTINCT FROM t.tool_name
ORDER BY t.app_name, t.tool_name;
