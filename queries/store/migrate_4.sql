-- name: migrate_4
-- Store schema 4: how each session's google-adk release is known (given at ingest, or inferred from its rows).
-- params: (none)
CREATE TABLE IF NOT EXISTS session_releases (
    app_name VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    basis VARCHAR NOT NULL,           -- given (--adk-version) | inferred
    version VARCHAR NOT NULL,         -- X.Y.Z whose rules apply (a range: its newest)
    since_version VARCHAR,            -- an inferred range: the first release it allows
    until_version VARCHAR,            -- ... and the first it rules out (NULL: open)
    detail VARCHAR NOT NULL,          -- the evidence, in words
    ingest_id BIGINT NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id, basis)
);
