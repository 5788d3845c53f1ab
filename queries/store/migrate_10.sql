-- name: migrate_10
-- Store schema 10: Claude Code transcripts. A session says which family of agent software wrote it (adk, claude-code); each Claude Code event keeps what the store's event columns cannot (transcript_events): for a call, the usage the provider billed as the transcript recorded it (uncached input, output, cache reads, cache writes and their 5-minute and 1-hour split), its message and request ids, speed and costUSD; for a compaction boundary, its trigger and preTokens; and for both the file, line and timestamp they were read from. And the transcript files read (transcript_files, per user the sessions were stored under), so a later ingest for that user reads again only the sessions whose files changed.
-- params: (none)
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS family VARCHAR DEFAULT 'adk';

CREATE TABLE IF NOT EXISTS transcript_events (
    app_name VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    event_id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,            -- call | failed | compaction
    file VARCHAR NOT NULL,            -- the transcript, relative to its projects folder
    line INTEGER,                     -- the line the figures are from (a call: its kept usage)
    "timestamp" VARCHAR,              -- that line's timestamp, as written
    epoch DOUBLE,                     -- the same instant, epoch seconds
    version VARCHAR,                  -- the Claude Code release that wrote the line
    message_id VARCHAR,
    request_id VARCHAR,
    model VARCHAR,                    -- message.model as written (`<synthetic>` included)
    is_sidechain BOOLEAN,
    speed VARCHAR,                    -- usage.speed (standard | fast)
    cost_usd DOUBLE,                  -- costUSD, where an old Claude Code wrote one
    -- message.usage of the kept line (measured)
    input_tokens BIGINT,              -- uncached input
    output_tokens BIGINT,
    cache_read_tokens BIGINT,
    cache_creation_tokens BIGINT,     -- cache_creation_input_tokens
    cache_write_5m_tokens BIGINT,     -- cache_creation.ephemeral_5m_input_tokens (null: no split)
    cache_write_1h_tokens BIGINT,     -- cache_creation.ephemeral_1h_input_tokens
    output_placeholder BOOLEAN,       -- 2.1+: no line of the response held its final usage
    -- compact_boundary
    "trigger" VARCHAR,                -- auto | manual
    pre_tokens BIGINT,                -- compactMetadata.preTokens (logged by Claude Code)
    ingest_id BIGINT NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id, event_id)
);

CREATE TABLE IF NOT EXISTS transcript_files (
    path VARCHAR NOT NULL,            -- the file as read (absolute)
    user_id VARCHAR NOT NULL,         -- the user its sessions were stored under
    size BIGINT NOT NULL,             -- bytes, when it was read
    mtime_ns BIGINT NOT NULL,         -- its modification time, when it was read
    lines BIGINT NOT NULL,            -- lines read
    ingest_id BIGINT NOT NULL,
    PRIMARY KEY (path, user_id)
);
