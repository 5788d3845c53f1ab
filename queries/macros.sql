-- name: macros
-- Helpers every normalising query uses; created per connection (TEMP).
-- params: (none)
-- present(j, path): the JSON at path, or SQL NULL when it is missing or JSON null
-- (ADK's own dumps leave nulls out, but other writers keep them).
CREATE OR REPLACE TEMP MACRO present(j, path) AS
    CASE WHEN json_type(j, path) <> 'NULL' THEN json_extract(j, path) END;
