-- name: migrate_12
-- Store schema 12: anchors, the verbatim strings a later call of a Claude Code session reproduced from a tool result (forensics/families/claude_code/anchors.py): per result and reproducing string, where its lines and words are in the result and the lines that hold them (byte offsets of its UTF-8 text), so that `whatif` can say which a cap would cut; and the sessions whose results were searched for them (anchor_sessions: a session not in it has anchors unknown, never none). Sessions read before are not searched until read again (ingest claude-code --full).
-- params: (none)
CREATE TABLE IF NOT EXISTS anchors (
    app_name VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    function_call_id VARCHAR NOT NULL,  -- the tool result's call
    tool_name VARCHAR,                  -- ... and its tool
    anchor_index INTEGER NOT NULL,      -- per call id of the session, in the order found
    event_id VARCHAR NOT NULL,          -- the later event (a model response) that reproduced it
    by_call_id VARCHAR,                 -- the tool call whose arguments did (null: the text)
    by_tool VARCHAR,
    field VARCHAR NOT NULL,             -- the argument (its innermost key), or `text`
    result_bytes BIGINT NOT NULL,       -- the result's text, UTF-8
    anchor_bytes BIGINT NOT NULL,       -- the reproduced lines and words found in it
    key_starts BIGINT[] NOT NULL,       -- [start, end) of each in the result
    key_ends BIGINT[] NOT NULL,
    line_starts BIGINT[] NOT NULL,      -- ... and of the line of the result that holds it
    line_ends BIGINT[] NOT NULL,
    ingest_id BIGINT NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id, function_call_id, anchor_index)
);

CREATE TABLE IF NOT EXISTS anchor_sessions (
    app_name VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    ingest_id BIGINT NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id)
);
