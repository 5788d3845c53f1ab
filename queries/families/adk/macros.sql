-- name: macros
-- Helpers of stage_parts, created once per normaliser connection.
-- params: (none)
-- dumps_extra(h): what Python's json.dumps (its defaults: ', ' and ': ', ensure_ascii)
-- writes beyond DuckDB's compact JSON text h: a space after every ':' and ',' outside
-- strings, 5 more characters for each non-ASCII character (\uXXXX) and 11 for each one
-- beyond the BMP (a surrogate pair).
CREATE OR REPLACE TEMP MACRO dumps_extra(h) AS
    length(regexp_replace(h, '"(?:[^"\\]|\\.)*"', '', 'g'))
    - length(replace(replace(regexp_replace(h, '"(?:[^"\\]|\\.)*"', '', 'g'), ':', ''), ',', ''))
    -- non-ASCII text is rare: its regexes run only where the bytes outnumber the characters,
    -- and match the rare characters (a pattern matching every ASCII one is 20x slower)
    + CASE WHEN strlen(h) = length(h) THEN 0 ELSE
          5 * (length(h) - length(regexp_replace(h, '[^\x00-\x7F]', '', 'g')))
          + 6 * (length(h) - length(regexp_replace(h, '[\x{10000}-\x{10FFFF}]', '', 'g')))
      END;
-- markdown_line(cells): one markdown table line of these cells: '| a | b |' and its
-- newline, a null cell empty, each '|' in a cell escaped as '\|'.
CREATE OR REPLACE TEMP MACRO markdown_line(cells) AS
    coalesce(list_sum(list_transform(cells, lambda c:
        2 * length(coalesce(c, '')) - length(replace(coalesce(c, ''), '|', '')))), 0)
    + 3 * len(cells) + 2;
