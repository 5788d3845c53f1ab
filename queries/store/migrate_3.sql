-- name: migrate_3
-- Store schema 3: model requests as ADK traced them (sizes only, never their text).
-- params: (none)
CREATE TABLE IF NOT EXISTS traced_calls (
    session_id VARCHAR NOT NULL,      -- traces name the session id alone
    event_id VARCHAR NOT NULL,        -- the stored event of the model's response
    span_id VARCHAR NOT NULL,
    trace_id VARCHAR,
    invocation_id VARCHAR,
    model VARCHAR,
    adk_version VARCHAR,              -- from the request's x-goog-api-client header
    started_at DOUBLE,                -- epoch seconds
    ended_at DOUBLE,
    input_tokens BIGINT,              -- gen_ai.usage.input_tokens
    output_tokens BIGINT,
    system_chars BIGINT NOT NULL,     -- the system instruction as sent
    tools_chars BIGINT NOT NULL,      -- the tool declarations as compact JSON
    contents INTEGER NOT NULL,
    ingest_id BIGINT NOT NULL,
    PRIMARY KEY (session_id, event_id)
);

CREATE TABLE IF NOT EXISTS traced_parts (
    session_id VARCHAR NOT NULL,
    event_id VARCHAR NOT NULL,
    content_index INTEGER NOT NULL,
    part_index INTEGER NOT NULL,
    role VARCHAR NOT NULL,            -- user | model | tool (a function_response)
    kind VARCHAR NOT NULL,
    tool_name VARCHAR,
    chars BIGINT NOT NULL
);
