-- name: part_rows
-- The store's part rows for the events in `staged`: `staged_parts`, with each function_response's row count and what a guard sizes of it (`sized_results` from families/adk/results.py, `staged_results` from stage_results.sql for the parts it declined).
-- params: (none)
SELECT p.*, r.row_count, r.rows_key, r.row_chars, r.row_extra, r.envelope_chars, r.envelope_extra,
       r.markdown_chars
FROM staged_parts AS p
LEFT JOIN (
    SELECT * FROM sized_results
    UNION ALL BY NAME
    SELECT * FROM staged_results
) AS r USING (app_name, user_id, session_id, event_id, origin, part_index);
