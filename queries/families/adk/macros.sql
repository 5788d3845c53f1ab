-- name: macros
-- Helpers of stage_parts, created once per normaliser connection.
-- params: (none)
-- structure(h): DuckDB's compact JSON text h without its strings (keys and values), as
-- the pieces between them: h split on its quotes once escaped backslashes and quotes are
-- taken out, every other piece. Split, not matched with a regular expression, and kept
-- as pieces, not joined: measured 4.8x faster on tool results.
CREATE OR REPLACE TEMP MACRO structure(h) AS
    list_filter(string_split(replace(replace(h, '\\', ''), '\"', ''), '"'),
                lambda piece, i: i % 2 = 1);
-- separators(s): the ':' and ',' of a structure(h): those outside strings.
CREATE OR REPLACE TEMP MACRO separators(s) AS
    list_sum(list_transform(s, lambda piece:
        length(piece) - length(replace(replace(piece, ':', ''), ',', ''))));
-- head_pieces(h), head_separators(pieces): the ':' and ',' of a JSON text cut short
-- (DuckDB's compact JSON, its first characters) outside its whole strings: those of its
-- pieces between quotes (as structure(h) splits it) outside strings, and of the rest of
-- a string the cut falls in (the last piece, when the pieces are even), as a regular
-- expression taking every whole string out leaves them (tests/test_sizes_property.py
-- holds the two equal; the expression took a quarter of stage_parts' time). Two macros:
-- the pieces a column, not split again for each piece.
CREATE OR REPLACE TEMP MACRO head_pieces(h) AS
    string_split(replace(replace(h, '\\', ''), '\"', ''), '"');
CREATE OR REPLACE TEMP MACRO head_separators(pieces) AS
    separators(list_filter(pieces, lambda piece, i: i % 2 = 1 OR i = len(pieces)));
-- unnested(h): a JSON text with no '[' and no '{' but the first, in its strings too: a
-- flat object (or a scalar) for certain, without splitting it.
CREATE OR REPLACE TEMP MACRO unnested(h) AS
    NOT contains(h[2:], '{') AND NOT contains(h, '[');
-- ascii_extra(h): what json.dumps's ensure_ascii adds: 5 characters for each non-ASCII
-- character (\uXXXX) and 11 for each one beyond the BMP (a surrogate pair). Non-ASCII
-- text is rare: the regular expressions run only where the bytes outnumber the
-- characters, and match the rare characters.
CREATE OR REPLACE TEMP MACRO ascii_extra(h) AS
    CASE WHEN strlen(h) = length(h) THEN 0 ELSE
        5 * (length(h) - length(regexp_replace(h, '[^\x00-\x7F]', '', 'g')))
        + 6 * (length(h) - length(regexp_replace(h, '[\x{10000}-\x{10FFFF}]', '', 'g')))
    END;
-- dumps_extra(h): what Python's json.dumps (its defaults: ', ' and ': ', ensure_ascii)
-- writes beyond the compact JSON text h: a space after every ':' and ',' outside
-- strings, and ascii_extra. A flat object of k keys has k ':' and k - 1 ',' (its keys
-- are read, 3x cheaper than its structure); any other text is split.
CREATE OR REPLACE TEMP MACRO dumps_extra(h) AS
    CASE WHEN starts_with(h, '{') AND unnested(h) THEN greatest(2 * len(json_keys(h)) - 1, 0)
         ELSE separators(structure(h)) END
    + ascii_extra(h);
-- flat(h): whether the JSON text h is an object of scalars: no '[' and no '{' but the
-- first outside its strings (a CASE, so that a text unnested() clears is never split).
CREATE OR REPLACE TEMP MACRO flat(h) AS
    CASE WHEN NOT starts_with(h, '{') THEN false
         WHEN unnested(h) THEN true
         ELSE NOT list_bool_or(list_transform(structure(h), lambda piece, i:
             contains(CASE WHEN i = 1 THEN piece[2:] ELSE piece END, '{')
             OR contains(piece, '[')))
    END;
-- markdown_line(cells): one markdown table line of these cells: '| a | b |' and its
-- newline, a null cell empty, each '|' in a cell escaped as '\|'.
CREATE OR REPLACE TEMP MACRO markdown_line(cells) AS
    coalesce(list_sum(list_transform(cells, lambda c:
        2 * length(coalesce(c, '')) - length(replace(coalesce(c, ''), '|', '')))), 0)
    + 3 * len(cells) + 2;
