-- name: migrate_5
-- Store schema 5: the reconstruction's facts, stored once per session (forensics/analysis/facts.py) and rebuilt when a session's inputs or the rules change.
-- params: (none)
CREATE TABLE IF NOT EXISTS fact_sessions (
    app_name VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    stamp VARCHAR NOT NULL,           -- the inputs the facts were built from (facts/stamps.sql)
    rules VARCHAR NOT NULL,           -- the rules version and the ADK release rules applied
    main_model VARCHAR NOT NULL,      -- the model most agent calls used ('' when none says)
    events INTEGER NOT NULL,
    calls INTEGER NOT NULL,
    compactions INTEGER NOT NULL,
    first_compaction_index INTEGER,   -- position of the first compaction event
    last_range_end DOUBLE,            -- epoch seconds
    retained_events_after INTEGER NOT NULL,
    retained_chars_after BIGINT NOT NULL,
    largest_retained_tool_result VARCHAR,
    largest_retained_result_chars BIGINT,
    PRIMARY KEY (app_name, user_id, session_id)
);

CREATE TABLE IF NOT EXISTS fact_calls (
    app_name VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    call_id VARCHAR NOT NULL,         -- the event id of the model's response
    call_index INTEGER NOT NULL,      -- its position in the session
    kind VARCHAR NOT NULL,            -- agent | failed | summarizer
    turn INTEGER,
    invocation_id VARCHAR,
    author VARCHAR,
    epoch DOUBLE NOT NULL,
    model VARCHAR NOT NULL,           -- whose tokenizer read the window ('' when none says)
    model_version VARCHAR,
    prompt_tokens BIGINT,             -- measured
    cached_tokens BIGINT,
    error_code VARCHAR,
    chars_user BIGINT NOT NULL,       -- the window's characters by role (rebuilt or traced)
    chars_model BIGINT NOT NULL,
    chars_tool BIGINT NOT NULL,
    chars_summary BIGINT NOT NULL,
    window_source VARCHAR NOT NULL,   -- rebuilt | traced
    system_tools_chars BIGINT,        -- traced calls: system instruction + tool declarations
    PRIMARY KEY (app_name, user_id, session_id, call_id)
);

-- Which tool results each agent call's request carried (relayed: quoted as another agent's text).
CREATE TABLE IF NOT EXISTS fact_carried (
    app_name VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    call_id VARCHAR NOT NULL,
    function_call_id VARCHAR NOT NULL,
    relayed BOOLEAN NOT NULL
);

CREATE TABLE IF NOT EXISTS fact_tool_calls (
    app_name VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    ordinal INTEGER NOT NULL,         -- order within the session (result event, then part)
    function_call_id VARCHAR NOT NULL,
    tool_name VARCHAR NOT NULL,
    source_call_id VARCHAR NOT NULL,  -- the call whose response issued the function_call
    invocation_id VARCHAR,
    turn INTEGER,
    agent VARCHAR,
    latency DOUBLE NOT NULL,          -- seconds from the issuing call to the result
    latency_s DOUBLE NOT NULL,        -- the same, rounded to milliseconds
    result_event_index INTEGER NOT NULL,
    result_chars BIGINT NOT NULL,
    row_count INTEGER,
    parallel_results INTEGER NOT NULL,
    after_call_id VARCHAR,            -- the first call that carried a result of that event
    resent_calls INTEGER NOT NULL,
    resent_calls_in_turn INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS fact_turns (
    app_name VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    invocation_id VARCHAR NOT NULL,
    turn INTEGER NOT NULL,
    tool_calls INTEGER NOT NULL,
    wall_s DOUBLE NOT NULL,
    largest_tool_result VARCHAR,
    largest_result_chars BIGINT,
    error_code VARCHAR,
    error_message VARCHAR,
    started_at DOUBLE NOT NULL
);

CREATE TABLE IF NOT EXISTS fact_compactions (
    app_name VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    ordinal INTEGER NOT NULL,
    compaction_event_id VARCHAR NOT NULL,
    event_index INTEGER NOT NULL,
    appended_at DOUBLE NOT NULL,
    appended_after_turn INTEGER,
    start_timestamp DOUBLE NOT NULL,
    end_timestamp DOUBLE NOT NULL,
    invocations_in_range INTEGER NOT NULL,
    turns_in_range INTEGER[] NOT NULL,
    raw_events_in_range INTEGER NOT NULL,
    raw_user_events INTEGER NOT NULL,
    raw_model_events INTEGER NOT NULL,
    raw_tool_result_events INTEGER NOT NULL,
    raw_other_events INTEGER NOT NULL,
    raw_chars_in_range BIGINT NOT NULL,
    tool_results_in_range INTEGER NOT NULL,
    tool_chars_in_range BIGINT NOT NULL,
    summary_chars BIGINT NOT NULL,
    summarizer_prompt_tokens BIGINT,
    summarizer_output_tokens BIGINT,
    overlap_with_previous INTEGER NOT NULL,
    overlap_seconds DOUBLE NOT NULL,
    retained_events_after INTEGER NOT NULL,
    retained_chars_after BIGINT NOT NULL,
    next_call_id VARCHAR,
    summary_in_next_request BOOLEAN,
    raw_in_range_sent_next INTEGER
);
