-- name: stage_events
-- Parse each raw event of `raw_batch` once into a struct of the fields the store keeps (`staged`).
-- params: (none)
-- One json_transform per event, parts included: every `->` (or a second
-- transform per part) parses the document again, which for 500 KB tool results
-- made ingest several times slower. Both ADK key styles are
-- read: snake_case (model_dump) and camelCase (web API). A field of the wrong
-- type becomes NULL; an event that is not valid JSON, or not an object, gets
-- e = NULL; such rows, and rows with an impossible timestamp, have valid = false
-- and are reported by invalid_events; the other queries read only valid rows. Keys read
-- only for whether they are there (JSON-typed) say which ADK release wrote the event
-- (release_keys.sql).
-- The loaders drop an event repeated within one batch (first wins).
CREATE OR REPLACE TEMP TABLE staged AS
SELECT
    app_name, user_id, session_id, event_id, locator, e, column_epoch,
    -- the event's own epoch, as ADK prefers on read; the column is the fallback
    coalesce(e.timestamp, column_epoch) AS epoch,
    -- readable, and a timestamp a DuckDB TIMESTAMP can hold (1970 to 3000)
    coalesce(e IS NOT NULL
             AND coalesce(e.timestamp, column_epoch) BETWEEN 0 AND 32503680000, false) AS valid,
    coalesce(column_invocation_id, e.invocation_id, e.invocationId) AS invocation_id,
    -- the text is kept only where it could not be read, to say why
    CASE WHEN e IS NULL THEN event_json END AS unreadable_json
FROM (
SELECT
    r.app_name, r.user_id, r.session_id, r.event_id, r.locator, r.event_json,
    r.invocation_id AS column_invocation_id, r.timestamp AS column_epoch,
    -- (only the head is trimmed: ltrim would copy a 500 KB text to read one character)
    CASE WHEN ltrim(left(r.event_json, 64))[1] = '{' THEN try(json_transform(r.event_json, '{
        "timestamp": "DOUBLE", "author": "VARCHAR", "branch": "VARCHAR",
        "invocation_id": "VARCHAR", "invocationId": "VARCHAR",
        "isolation_scope": "VARCHAR", "isolationScope": "VARCHAR",
        "model_version": "VARCHAR", "modelVersion": "VARCHAR",
        "partial": "BOOLEAN", "turn_complete": "BOOLEAN", "turnComplete": "BOOLEAN",
        "interrupted": "BOOLEAN", "finish_reason": "VARCHAR", "finishReason": "VARCHAR",
        "error_code": "VARCHAR", "errorCode": "VARCHAR",
        "error_message": "VARCHAR", "errorMessage": "VARCHAR",
        "long_running_tool_ids": "VARCHAR[]", "longRunningToolIds": "VARCHAR[]",
        "node_info": "JSON", "nodeInfo": "JSON",
        "turn_complete_reason": "JSON", "turnCompleteReason": "JSON",
        "interaction_id": "JSON", "interactionId": "JSON",
        "environment_id": "JSON", "environmentId": "JSON",
        "interaction_status": "JSON", "interactionStatus": "JSON",
        "usage_metadata": {
            "prompt_token_count": "BIGINT", "candidates_token_count": "BIGINT",
            "cached_content_token_count": "BIGINT", "thoughts_token_count": "BIGINT",
            "tool_use_prompt_token_count": "BIGINT", "total_token_count": "BIGINT"},
        "usageMetadata": {
            "promptTokenCount": "BIGINT", "candidatesTokenCount": "BIGINT",
            "cachedContentTokenCount": "BIGINT", "thoughtsTokenCount": "BIGINT",
            "toolUsePromptTokenCount": "BIGINT", "totalTokenCount": "BIGINT"},
        "content": {"parts": [{
                "text": "VARCHAR", "thought": "BOOLEAN",
                "thought_signature": "VARCHAR", "thoughtSignature": "VARCHAR",
                "function_call": {"id": "VARCHAR", "name": "VARCHAR", "args": "JSON"},
                "functionCall": {"id": "VARCHAR", "name": "VARCHAR", "args": "JSON"},
                "function_response": {"id": "VARCHAR", "name": "VARCHAR", "response": "JSON", "chars": "BIGINT"},
                "functionResponse": {"id": "VARCHAR", "name": "VARCHAR", "response": "JSON", "chars": "BIGINT"},
                "inline_data": "JSON", "inlineData": "JSON", "file_data": "JSON", "fileData": "JSON",
                "executable_code": "JSON", "executableCode": "JSON",
                "code_execution_result": "JSON", "codeExecutionResult": "JSON"}]},
        "actions": {
            "transfer_to_agent": "VARCHAR", "transferToAgent": "VARCHAR",
            "requested_auth_configs": "JSON", "requestedAuthConfigs": "JSON",
            "requested_tool_confirmations": "JSON", "requestedToolConfirmations": "JSON",
            "end_of_agent": "JSON", "endOfAgent": "JSON",
            "route": "JSON", "transfer_reason": "JSON", "transferReason": "JSON",
            "rewind_before_invocation_id": "VARCHAR", "rewindBeforeInvocationId": "VARCHAR",
            "compaction": {
                "start_timestamp": "DOUBLE", "startTimestamp": "DOUBLE",
                "end_timestamp": "DOUBLE", "endTimestamp": "DOUBLE",
                "compacted_content": {"parts": [{
                        "text": "VARCHAR", "thought": "BOOLEAN",
                        "thought_signature": "VARCHAR", "thoughtSignature": "VARCHAR",
                        "function_call": {"id": "VARCHAR", "name": "VARCHAR", "args": "JSON"},
                        "functionCall": {"id": "VARCHAR", "name": "VARCHAR", "args": "JSON"},
                        "function_response": {"id": "VARCHAR", "name": "VARCHAR", "response": "JSON", "chars": "BIGINT"},
                        "functionResponse": {"id": "VARCHAR", "name": "VARCHAR", "response": "JSON", "chars": "BIGINT"},
                        "inline_data": "JSON", "inlineData": "JSON", "file_data": "JSON", "fileData": "JSON",
                        "executable_code": "JSON", "executableCode": "JSON",
                        "code_execution_result": "JSON", "codeExecutionResult": "JSON"}]},
                "compactedContent": {"parts": [{
                        "text": "VARCHAR", "thought": "BOOLEAN",
                        "thought_signature": "VARCHAR", "thoughtSignature": "VARCHAR",
                        "function_call": {"id": "VARCHAR", "name": "VARCHAR", "args": "JSON"},
                        "functionCall": {"id": "VARCHAR", "name": "VARCHAR", "args": "JSON"},
                        "function_response": {"id": "VARCHAR", "name": "VARCHAR", "response": "JSON", "chars": "BIGINT"},
                        "functionResponse": {"id": "VARCHAR", "name": "VARCHAR", "response": "JSON", "chars": "BIGINT"},
                        "inline_data": "JSON", "inlineData": "JSON", "file_data": "JSON", "fileData": "JSON",
                        "executable_code": "JSON", "executableCode": "JSON",
                        "code_execution_result": "JSON", "codeExecutionResult": "JSON"}]}}}
    }')) END AS e
FROM raw_batch AS r
);
