-- name: ranged_sessions
-- The sessions in `scope_sessions` whose ADK release is not known and whose rule sets rebuild some of their agent calls' windows differently: how many such calls (and of them, how many without usage and not failed: priced on an estimate), of how many, the rules they were rebuilt with, and the rule boundaries that cause it (fact_sessions.rules_range); in scope order.
-- params: (none)
SELECT o.app_name, o.user_id, o.session_id, o.rules,
       count(*) FILTER (WHERE f.chars_low IS NOT NULL) AS ranged_calls,
       count(*) FILTER (WHERE f.chars_low IS NOT NULL AND f.prompt_tokens IS NULL
                        AND f.kind <> 'failed') AS ranged_unmeasured,
       count(*) AS calls,
       any_value(fs.rules_range) AS rules_range
FROM fact_calls AS f
JOIN scope_sessions AS o USING (app_name, user_id, session_id)
JOIN fact_sessions AS fs USING (app_name, user_id, session_id)
WHERE f.kind <> 'summarizer' AND fs.rules_range IS NOT NULL
GROUP BY o.app_name, o.user_id, o.session_id, o.rules, o.ordinal
HAVING count(*) FILTER (WHERE f.chars_low IS NOT NULL) > 0
ORDER BY o.ordinal;
