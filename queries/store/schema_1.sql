-- name: schema_1
-- The store's schema, version 1: sessions, events, parts and the ingest ledger.
-- params: (none)
CREATE TABLE IF NOT EXISTS store_meta (
    key VARCHAR PRIMARY KEY,
    value VARCHAR NOT NULL
);

CREATE SEQUENCE IF NOT EXISTS ingest_ids START 1;

CREATE TABLE IF NOT EXISTS ingests (
    ingest_id BIGINT PRIMARY KEY,
    kind VARCHAR NOT NULL,            -- adk-postgres | adk-sqlite | adk-json
    location VARCHAR NOT NULL,        -- path or DSN, password redacted
    filters JSON,                     -- the filters pushed down, as given
    started_at TIMESTAMP NOT NULL,    -- UTC
    finished_at TIMESTAMP,
    status VARCHAR NOT NULL,          -- ok | failed | interrupted
    error VARCHAR,                    -- why a failed run failed
    rows_read BIGINT NOT NULL DEFAULT 0,
    rows_loaded BIGINT NOT NULL DEFAULT 0,
    rows_skipped BIGINT NOT NULL DEFAULT 0,
    skip_reasons JSON,                -- {reason: count}
    watermark_before DOUBLE,          -- epoch seconds read from, if incremental
    watermark DOUBLE                  -- newest event timestamp seen (epoch seconds)
);

-- At most a few hundred per ingest: enough to name the bad rows.
CREATE TABLE IF NOT EXISTS ingest_skips (
    ingest_id BIGINT NOT NULL,
    locator VARCHAR NOT NULL,
    reason VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS sessions (
    app_name VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    create_time TIMESTAMP,
    update_time TIMESTAMP,
    source VARCHAR NOT NULL,          -- kind:location of the first ingest that saw it
    ingest_id BIGINT NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id)
);

CREATE TABLE IF NOT EXISTS events (
    app_name VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    event_id VARCHAR NOT NULL,
    invocation_id VARCHAR,
    author VARCHAR,
    branch VARCHAR,
    isolation_scope VARCHAR,
    timestamp TIMESTAMP NOT NULL,     -- UTC, microseconds
    epoch DOUBLE NOT NULL,            -- the same instant as stored by ADK (seconds)
    model_version VARCHAR,
    partial BOOLEAN,
    turn_complete BOOLEAN,
    interrupted BOOLEAN,
    finish_reason VARCHAR,
    error_code VARCHAR,
    error_message VARCHAR,
    long_running_tool_ids VARCHAR[],  -- calls that answer later; ADK keeps them unanswered
    -- usage_metadata: the provider's own counts (measured)
    prompt_tokens BIGINT,
    candidates_tokens BIGINT,
    cached_tokens BIGINT,
    thoughts_tokens BIGINT,
    tool_use_prompt_tokens BIGINT,
    total_tokens BIGINT,
    -- actions
    is_compaction BOOLEAN NOT NULL,
    compaction_start DOUBLE,          -- epoch seconds, as ADK stores them
    compaction_end DOUBLE,
    transfer_to_agent VARCHAR,
    rewind_before_invocation_id VARCHAR,
    -- sizes of the content parts (the compaction summary is counted apart)
    part_count INTEGER NOT NULL,
    chars BIGINT NOT NULL,
    kinds VARCHAR[] NOT NULL,         -- distinct part kinds: text, thought, function_call, ...
    ingest_id BIGINT NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id, event_id)
);

CREATE TABLE IF NOT EXISTS parts (
    app_name VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    event_id VARCHAR NOT NULL,
    origin VARCHAR NOT NULL,          -- content | compaction (the summary's parts)
    part_index INTEGER NOT NULL,      -- 0-based within its origin
    kind VARCHAR NOT NULL,            -- text | thought | function_call | function_response | other
    tool_name VARCHAR,
    function_call_id VARCHAR,
    has_thought_signature BOOLEAN NOT NULL,
    chars BIGINT NOT NULL,            -- characters of the part's payload (see docs/sizes in README)
    row_count INTEGER,                -- records in a function_response payload that holds a list
    relay_chars BIGINT NOT NULL,      -- size when relayed to another agent as text (see stage_parts)
    preview VARCHAR,                  -- the first 2,000 characters of what `chars` measures
    PRIMARY KEY (app_name, user_id, session_id, event_id, origin, part_index)
);
