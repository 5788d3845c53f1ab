-- name: result_rows
-- Per tool result of the sessions in `scope_sessions` ($tool: only that tool's): what a guard replay reads of it, its rows' sizes as lists (`row_chars`, `row_extra`, from the parts' shape columns of store schema 9), for forensics/whatif/fit.py.
-- params: $tool
SELECT * FROM (
    SELECT g.app_name, g.user_id, g.session_id, g.ordinal, g.function_call_id, g.tool_name,
           g.turn, g.agent, g.result_chars, g.resent_calls AS sends,  -- the first included
           p.rows_key, p.row_chars, p.row_extra, p.envelope_chars, p.envelope_extra,
           p.markdown_chars, len(p.row_chars) AS n,
           r.chars_per_token AS fitted
    FROM fact_tool_calls AS g
    SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
    JOIN fact_sessions AS fs USING (app_name, user_id, session_id)
    JOIN scope_ratios AS r ON r.model = fs.main_model
    LEFT JOIN parts AS p
        ON p.app_name = g.app_name AND p.user_id = g.user_id AND p.session_id = g.session_id
       AND p.function_call_id = g.function_call_id AND p.kind = 'function_response'
       AND p.origin = 'content'
    WHERE $tool IS NULL OR g.tool_name = $tool
    QUALIFY row_number() OVER (PARTITION BY g.app_name, g.user_id, g.session_id, g.ordinal
                               ORDER BY p.event_id, p.part_index) = 1
)
ORDER BY app_name, user_id, session_id, ordinal;
