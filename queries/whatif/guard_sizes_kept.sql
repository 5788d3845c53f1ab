-- name: guard_sizes_kept
-- guard_sizes.sql's rows of the sessions in `scope_sessions`, the columns the guards audit reads, from those kept for the whole store at the founding guard's 3.0 characters per token (`guard_kept`: forensics/whatif/kept.py), in no order (the audit groups them); rows_over_budget is 0 where no row of the result is over $budget on its own, else unknown (null: the caller reads the rows then).
-- params: $budget
SELECT app_name, tool_name, payload, "rows", guard_tokens, largest_row_guard_tokens,
       row_guard_tokens,
       CASE WHEN largest_row_guard_tokens > $budget THEN NULL ELSE 0 END::BIGINT
           AS rows_over_budget,
       rows_dumps_chars, markdown_chars
FROM guard_kept
SEMI JOIN scope_sessions USING (app_name, user_id, session_id);
