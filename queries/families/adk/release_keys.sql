-- name: release_keys
-- Per session of `staged`, what its stored events' keys say of the google-adk release that wrote them (docs/adk-window-rules-by-release.md, "What a stored event says of its release"): of its whole events (those with the `actions` keys every release writes), how many lack a key every release from 1.14.0 writes (`requested_tool_confirmations`) and from 2.0.0 (`node_info`), and which keys written only when set are there at all (each the first release that has it; the lower bounds that would cost a copy of a large value, agent_state, citation_metadata, render_ui_widgets, are not read).
-- params: (none)
WITH keyed AS (
    SELECT app_name, user_id, session_id,
           e.actions.requested_auth_configs IS NOT NULL
               OR e.actions.requestedAuthConfigs IS NOT NULL AS whole,
           e.actions.requested_tool_confirmations IS NOT NULL
               OR e.actions.requestedToolConfirmations IS NOT NULL AS confirmations,
           e.node_info IS NOT NULL OR e.nodeInfo IS NOT NULL AS node_info,
           e.turn_complete_reason IS NOT NULL OR e.turnCompleteReason IS NOT NULL
               AS turn_complete_reason,
           e.finish_reason IS NOT NULL OR e.finishReason IS NOT NULL AS finish_reason,
           e.actions.compaction IS NOT NULL AS compaction,
           e.actions.end_of_agent IS NOT NULL OR e.actions.endOfAgent IS NOT NULL
               AS since_1_16,
           e.actions.rewind_before_invocation_id IS NOT NULL
               OR e.actions.rewindBeforeInvocationId IS NOT NULL AS rewind,
           e.model_version IS NOT NULL OR e.modelVersion IS NOT NULL AS model_version,
           e.interaction_id IS NOT NULL OR e.interactionId IS NOT NULL AS interaction_id,
           e.isolation_scope IS NOT NULL OR e.isolationScope IS NOT NULL
               OR e.actions.route IS NOT NULL AS since_2_0,
           e.environment_id IS NOT NULL OR e.environmentId IS NOT NULL AS environment_id,
           e.interaction_status IS NOT NULL OR e.interactionStatus IS NOT NULL
               AS interaction_status,
           e.actions.transfer_reason IS NOT NULL OR e.actions.transferReason IS NOT NULL
               AS transfer_reason
    FROM staged
    WHERE valid
)
SELECT app_name, user_id, session_id,
       count(*) FILTER (WHERE whole) AS whole_events,
       count(*) FILTER (WHERE whole AND NOT confirmations) AS without_confirmations,
       count(*) FILTER (WHERE whole AND NOT node_info) AS without_node_info,
       bool_or(whole AND node_info) AS node_info,
       bool_or(turn_complete_reason) AS turn_complete_reason,
       bool_or(finish_reason) AS finish_reason,
       bool_or(compaction) AS compaction,
       bool_or(since_1_16) AS since_1_16,
       bool_or(rewind) AS rewind,
       bool_or(model_version) AS model_version,
       bool_or(interaction_id) AS interaction_id,
       bool_or(since_2_0) AS since_2_0,
       bool_or(environment_id) AS environment_id,
       bool_or(interaction_status) AS interaction_status,
       bool_or(transfer_reason) AS transfer_reason
FROM keyed
GROUP BY ALL
HAVING count(*) FILTER (WHERE whole) > 0;
