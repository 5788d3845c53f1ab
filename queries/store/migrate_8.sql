-- name: migrate_8
-- Store schema 8: task outcomes, one row per execution (a session, or one turn of it by invocation id), loaded from a user's CSV/JSON or ADK's eval results; a later load of the same execution replaces it.
-- params: (none)
CREATE TABLE IF NOT EXISTS outcomes (
    session_id VARCHAR NOT NULL,
    invocation_id VARCHAR NOT NULL,   -- '' when the whole session is the execution
    task_id VARCHAR NOT NULL,
    arm VARCHAR NOT NULL,             -- '' when none was given
    success BOOLEAN,                  -- null: not evaluated
    score DOUBLE,
    source VARCHAR NOT NULL,          -- csv | json | adk-eval
    locator VARCHAR NOT NULL,
    ingest_id BIGINT NOT NULL,
    PRIMARY KEY (session_id, invocation_id)
);
