"""Every frame the toolkit outputs, declared once: columns, types, provenance, meaning.

The frames' builders (store queries, analysis, plan) produce exactly these columns;
the CLI shows them with the table columns, totals and footnotes given here; the
README's field table is generated from the `help` texts (tests/test_golden.py checks
it is current).
"""

from __future__ import annotations

import polars as pl

from .provenance import (
    ESTIMATED,
    INFERRED,
    LOGGED,
    MEASURED,
    PRICED,
    TRACED,
    Column,
    Spec,
    epoch,
)

S, I64, I32, F64, B = pl.String, pl.Int64, pl.Int32, pl.Float64, pl.Boolean
NAIVE = pl.Datetime("us")  # DuckDB TIMESTAMP: UTC without a zone
USD = pl.Decimal(38, 18)  # money, exact; rounded only when shown
ROLES = ("user", "model", "tool", "summary")

# ---------------------------------------------------------------------------
# The store: sessions, events, the ledger
# ---------------------------------------------------------------------------

SESSIONS = Spec(
    "sessions",
    (
        Column("app_name", S),
        Column("user_id", S),
        Column("session_id", S),
        Column("events", I64),
        Column(
            "turns",
            I64,
            help="counted: distinct `invocation_id`s in the session; a compaction event's "
            "own invocation id is not a turn",
        ),
        Column("first_event_at", NAIVE),
        Column("last_event_at", NAIVE),
        Column("errors", I64),
        Column("prompt_tokens", I64, MEASURED),
        Column("source", S),
    ),
    table=(
        "session_id",
        "app_name",
        "user_id",
        "events",
        "turns",
        "errors",
        "prompt_tokens",
        "first_event_at",
        "last_event_at",
        "source",
    ),
    totals=("events", "turns", "errors", "prompt_tokens"),
    footnote="prompt_tokens: measured (provider usage_metadata), summed over the session; "
    "turns: invocations, compaction events not counted",
)

EVENTS = Spec(
    "events",
    (
        Column("event_id", S),
        Column("invocation_id", S),
        Column("author", S),
        Column("timestamp", NAIVE),
        Column("kinds", pl.List(S)),
        Column("parts", I32),
        Column(
            "chars",
            I64,
            MEASURED,
            help="characters of the stored content parts: text and "
            "thoughts as written; a function_call's name + its args as compact JSON; a "
            "function_response's name + its response as compact JSON; any other part its "
            "payload (inline_data, file_data, code) as compact JSON",
        ),
        Column(
            "prompt_tokens",
            I64,
            MEASURED,
            help="the provider's `usage_metadata.prompt_token_count` on that event; empty "
            "when the event carried none",
        ),
        Column(
            "candidates_token_count",
            I64,
            MEASURED,
            help="the provider's `usage_metadata.candidates_token_count`",
        ),
        Column(
            "cached_tokens",
            I64,
            MEASURED,
            help="the provider's `usage_metadata.cached_content_token_count`",
        ),
        Column("error_code", S),
        Column("error_message", S),
        Column("is_compaction", B),
        Column("branch", S),
        Column("transfer_to_agent", S),
        Column("app_name", S),
        Column("user_id", S),
        Column("session_id", S),
    ),
    table=(
        "timestamp",
        "author",
        "invocation_id",
        "kinds",
        "chars",
        "prompt_tokens",
        "candidates_token_count",
        "cached_tokens",
        "error_code",
        "is_compaction",
        "event_id",
    ),
    totals=("chars", "prompt_tokens", "candidates_token_count", "cached_tokens"),
    footnote="chars: measured from stored content; *_tokens: measured (usage_metadata)",
)

INGESTS = Spec(
    "ingests",
    (
        Column("ingest_id", I64),
        Column("source", S),
        Column("kind", S),
        Column("filters", S),
        Column("started_at", NAIVE),
        Column("finished_at", NAIVE),
        Column(
            "status",
            S,
            help="ok, failed, interrupted (Ctrl-C, SIGTERM), or unrecorded: a run whose "
            "process was killed before it wrote its row, listed from what it stored",
        ),
        Column(
            "rows_read",
            I64,
            help="counted: source rows this ingest read; `rows_read - rows_loaded - "
            "rows_skipped` were already stored",
        ),
        Column("rows_loaded", I64, help="counted: events stored by this ingest"),
        Column("rows_skipped", I64, help="counted: rows not loaded, each with its reason"),
        Column("rows_already_stored", I64),
        Column("skip_reasons", S),
        Column("watermark", F64),
        Column("error", S),
        Column(
            "notes",
            S,
            help="what the ingest found out about its source, e.g. `event_times`: the clock "
            "a V0 SQLite file's event times were written in and how it was known",
        ),
    ),
    table=(
        "ingest_id",
        "started_at",
        "status",
        "source",
        "rows_read",
        "rows_loaded",
        "rows_skipped",
        "skip_reasons",
        "error",
    ),
    totals=("rows_read", "rows_loaded", "rows_skipped"),
    json_columns=("filters", "skip_reasons", "notes"),
)

INGEST_SKIPS = Spec(
    "ingest_skips", (Column("locator", S), Column("reason", S)), command="ingests --skips"
)

INGEST_RUN = Spec(
    "ingest_run",
    (
        Column("ingest_id", I64),
        Column("source", S),
        Column("rows_read", I64),
        Column("rows_loaded", I64),
        Column("rows_skipped", I64),
        Column("rows_already_stored", I64),
        Column("skip_reasons", S),
        Column("watermark", F64),
        Column("seconds", F64),
        Column("notes", S),
    ),
    json_columns=("skip_reasons", "notes"),
    command="ingest ...",
)

# ---------------------------------------------------------------------------
# Windows: calls, one call's window, tool-call growth, turns
# ---------------------------------------------------------------------------

CALLS = Spec(
    "calls",
    (
        Column("call_id", S),
        Column("session_id", S),
        Column("app_name", S),
        Column("user_id", S),
        Column("invocation_id", S),
        Column("turn", I64),
        Column("agent", S),
        Column("kind", S),
        epoch("timestamp"),
        Column("model_version", S),
        Column(
            "occupancy_measured",
            I64,
            MEASURED,
            help="the call's `prompt_token_count`: tokens in its window",
        ),
        Column(
            "occupancy_estimated",
            I64,
            ESTIMATED,
            help="the window's characters (traced or rebuilt: `window_source`) over the "
            "fitted chars-per-token ratio",
        ),
        Column(
            "occupancy_estimated_low",
            I64,
            ESTIMATED,
            help="where the session's ADK release is not known (inferred as a range, or "
            "never) and the releases it may be rebuild this window differently: the "
            "lowest estimate among them (`occupancy_estimated` is the newest's); empty "
            "otherwise. --adk-version at ingest, or the session's trace, removes it",
        ),
        Column(
            "occupancy_estimated_high",
            I64,
            ESTIMATED,
            help="... and the highest",
        ),
        Column(
            "rules_range",
            S,
            help="the release boundaries that make a call's estimate a range, each with "
            "the release that brought it (e.g. `relay format (2.8.0)`)",
        ),
        Column(
            "occupancy",
            I64,
            help="measured where the call has usage, else the estimate plus the agent's "
            "fitted constant; `occupancy_source` says which (`measured`, `estimated+inferred`)",
        ),
        Column("occupancy_source", S),
        Column(
            "cumulative_input_measured",
            I64,
            MEASURED,
            help="running sum of measured windows in the turn; null until a call has usage",
        ),
        Column(
            "cumulative_input_estimated",
            I64,
            ESTIMATED,
            help="running sum of estimated windows in the turn",
        ),
        Column(
            "cumulative_input",
            I64,
            help="running sum of `occupancy` in the turn: what is billed as input again and "
            "again; `cumulative_input_source` says how it is known",
        ),
        Column("cumulative_input_source", S),
        Column("cached_tokens", I64),
        Column(
            "chars",
            I64,
            help="the window's characters: the traced request's where ADK traced it, else "
            "rebuilt from the stored events",
        ),
        Column(
            "window_source",
            S,
            help="`traced` (ADK's trace of this request: its sizes by role, system "
            "instruction and tools) or `rebuilt` (from the stored events by the release's "
            "rules)",
        ),
        Column(
            "system_tools_chars",
            I64,
            TRACED,
            help="the traced request's system instruction and tool declarations, in "
            "characters; empty when the call is not traced",
        ),
        Column(
            "by_role",
            pl.Struct({r: I64 for r in (*ROLES, "inferred_system")}),
            "estimated; inferred_system inferred",
            help="the window's tokens by role (user, model, tool, summary: estimated; a "
            "traced window has the request's roles, so summaries are under model or user); "
            "`inferred_system`: system instruction and tool schemas, estimated from their "
            "traced characters, else measured minus the estimated window (inferred; empty "
            "when that is below zero)",
        ),
        Column(
            "system_residual",
            I64,
            INFERRED,
            help="measured minus the estimated window, as computed: below zero, the "
            "estimate is wrong for this call (see `gauge_blind`)",
        ),
        Column("estimate_error", F64, INFERRED),
        Column(
            "gauge_blind",
            B,
            help="the visible content's estimate exceeds the measured prompt by more than "
            "25%: the ratio does not fit this call",
        ),
        Column(
            "ratio_source",
            S,
            help="`traced` (per model, on its traced calls with usage: system and tools "
            "known), `fitted` (per model, on the store's calls that have usage) or "
            "`default` (3.0 chars per token; `ratio_note` says why)",
        ),
        Column("ratio_model", S),
        Column("ratio_note", S),
        Column("chars_per_token", F64),
        Column("ratio_mean_abs_error", F64),
        Column("source", S),
        Column("error_code", S),
    ),
    table=(
        "turn",
        "timestamp",
        "agent",
        "kind",
        "occupancy_measured",
        "occupancy_estimated",
        "user",
        "model",
        "tool",
        "summary",
        "inferred_system",
        "cumulative_input_measured",
        "cumulative_input_estimated",
        "gauge_blind",
        "error_code",
        "call_id",
    ),
    totals=("occupancy_measured", "occupancy_estimated"),
    unnest=("by_role",),
    # the footnote names the ratio behind the estimates: see cli.windows
)

WINDOW = Spec(
    "window",
    (
        Column("event_id", S),
        Column("part_index", I64),
        Column("part_kind", S),
        Column("author", S),
        Column("role", S),
        Column("relayed", B),
        Column("tool_name", S),
        Column("function_call_id", S),
        Column("chars", I64, "measured from stored content (relayed: ADK's rendering)"),
        Column("tokens_estimated", I64, ESTIMATED),
    ),
    table=(
        "event_id",
        "part_index",
        "part_kind",
        "author",
        "role",
        "relayed",
        "tool_name",
        "chars",
        "tokens_estimated",
    ),
    totals=("chars", "tokens_estimated"),
    footnote="chars: measured from the stored events; tokens_estimated: chars / ratio",
)

GROWTH = Spec(
    "growth",
    (
        Column("session_id", S),
        Column("invocation_id", S),
        Column("turn", I64),
        Column("agent", S),
        Column("tool_name", S),
        Column("function_call_id", S),
        Column(
            "latency_s",
            F64,
            "inferred (upper bound: includes model generation time)",
            help="upper bound: stored result minus the start of the model request that asked "
            "for the tool",
        ),
        Column("result_chars", I64),
        Column("result_tokens_estimated", I64, ESTIMATED),
        Column("rows", I64),
        Column("tokens_per_row", I64, ESTIMATED),
        Column("occupancy_before", I64, "see occupancy_source"),
        Column(
            "occupancy_before_low",
            I64,
            ESTIMATED,
            help="where the session's ADK release is not known and the releases it may be "
            "rebuild the estimated window differently: its lowest estimate (`calls`' "
            "occupancy_estimated_low); empty otherwise, and where both calls are measured",
        ),
        Column("occupancy_before_high", I64, ESTIMATED, help="... and its highest"),
        Column("occupancy_after", I64, "see occupancy_source"),
        Column("occupancy_after_low", I64, ESTIMATED, help="... the same, after"),
        Column("occupancy_after_high", I64, ESTIMATED),
        Column("occupancy_source", S),
        Column(
            "growth_tokens",
            I64,
            "see occupancy_source; split by result size when parallel",
            help="window of the first call that carried the result minus the window of the "
            "call that asked; split by result size between parallel results",
        ),
        Column(
            "growth_tokens_low",
            I64,
            ESTIMATED,
            help="where those releases grow the window between the two calls by different "
            "amounts: the least (the characters each grew it by over the ratio, where both "
            "calls' model reads at one: the two windows' rounding to whole tokens can move a "
            "release's growth by up to two more; where the two read at different ratios, "
            "and either window has a range: the lowest after window less the highest before "
            "one); empty where they agree",
        ),
        Column("growth_tokens_high", I64, ESTIMATED, help="... and the most"),
        Column(
            "rules_range",
            S,
            help="the release boundaries behind the ranges (as in `calls`); --adk-version "
            "at ingest, or the session's trace, removes them",
        ),
        Column("growth_tokens_per_s", I64),
        Column("parallel_results", I64),
        Column(
            "resent_calls",
            I64,
            help="inferred: later calls whose rebuilt window carried the result (in the "
            "session; `resent_calls_in_turn`: in the same turn)",
        ),
        Column(
            "resent_tokens",
            I64,
            ESTIMATED,
            help="the result's estimated tokens times `resent_calls` (`resent_tokens_in_turn`: "
            "times `resent_calls_in_turn`)",
        ),
        Column("resent_calls_in_turn", I64),
        Column("resent_tokens_in_turn", I64),
    ),
    table=(
        "session_id",
        "turn",
        "tool_name",
        "latency_s",
        "rows",
        "tokens_per_row",
        "result_tokens_estimated",
        "occupancy_before",
        "occupancy_after",
        "growth_tokens",
        "resent_calls",
        "resent_tokens",
    ),
    totals=("resent_tokens",),
    footnote="occupancy_*: measured when both calls have usage (occupancy_source); "
    "resent_*: later calls that carried the result, and its estimated tokens times them",
)

TURNS = Spec(
    "turns",
    (
        Column("session_id", S),
        Column("invocation_id", S),
        Column("turn", I64),
        Column("calls", I64),
        Column("tool_calls", I64),
        Column("wall_s", F64, "measured (first to last stored event of the turn)"),
        Column("peak_occupancy_measured", I64, MEASURED),
        Column("peak_occupancy_estimated", I64, ESTIMATED),
        Column(
            "peak_occupancy_estimated_low",
            I64,
            ESTIMATED,
            help="where the session's ADK release is not known and the releases it may be "
            "rebuild a call of the turn differently: the peak of the calls' lowest "
            "estimates (`calls`' occupancy_estimated_low); empty otherwise",
        ),
        Column("peak_occupancy_estimated_high", I64, ESTIMATED, help="... of their highest"),
        Column("peak_occupancy", I64, "measured where usage exists, else estimated"),
        Column(
            "peak_occupancy_low",
            I64,
            ESTIMATED,
            help="where a call of the turn without usage has an estimate range (as "
            "`peak_occupancy_estimated_low`): the peak of the calls' lowest figures; empty "
            "otherwise",
        ),
        Column("peak_occupancy_high", I64, ESTIMATED, help="... of their highest"),
        Column("peak_occupancy_source", S),
        Column("cumulative_input_measured", I64, MEASURED),
        Column("cumulative_input_estimated", I64, ESTIMATED),
        Column(
            "cumulative_input_estimated_low",
            I64,
            ESTIMATED,
            help="where the session's ADK release is not known and the releases it may be "
            "rebuild a call of the turn differently: the sum of the calls' lowest estimates "
            "(each call's own where the releases agree); empty otherwise",
        ),
        Column("cumulative_input_estimated_high", I64, ESTIMATED, help="... of their highest"),
        Column(
            "rules_range",
            S,
            help="the release boundaries that make the turn's estimates a range (as in "
            "`calls`); --adk-version at ingest, or the session's trace, removes it",
        ),
        Column("cumulative_input", I64),
        Column(
            "cumulative_input_low",
            I64,
            ESTIMATED,
            help="as `cumulative_input_estimated_low`, for `cumulative_input`, where a call "
            "without usage moves it: the sum of the calls' lowest figures",
        ),
        Column("cumulative_input_high", I64, ESTIMATED, help="... of their highest"),
        Column("cumulative_input_source", S),
        Column("largest_tool_result", S),
        Column("largest_result_tokens_estimated", I64, ESTIMATED),
        Column("error_code", S),
        Column("error_message", S),
        epoch("started_at"),
    ),
    table=(
        "session_id",
        "turn",
        "started_at",
        "calls",
        "tool_calls",
        "wall_s",
        "peak_occupancy",
        "cumulative_input_measured",
        "cumulative_input_estimated",
        "largest_tool_result",
        "largest_result_tokens_estimated",
        "error_code",
    ),
    totals=("calls", "tool_calls", "cumulative_input_measured", "cumulative_input_estimated"),
    footnote="peak_occupancy: measured where usage exists, else estimated; "
    "cumulative_input_*: sum of the turn's call windows (measured / estimated)",
)

# ---------------------------------------------------------------------------
# Compaction audit
# ---------------------------------------------------------------------------

COMPACTION_RANGES = Spec(
    "compaction_ranges",
    (
        Column("session_id", S),
        Column("compaction_event_id", S),
        epoch("appended_at"),
        Column("appended_after_turn", I64),
        epoch("start_timestamp"),
        epoch("end_timestamp"),
        Column("invocations_in_range", I64),
        Column("turns_in_range", pl.List(I64)),
        Column("raw_events_in_range", I64, "measured (stored events)"),
        Column(
            "raw_events_by_kind",
            pl.Struct({"user": I64, "model": I64, "tool_result": I64, "other": I64}),
        ),
        Column("raw_tokens_in_range", I64, ESTIMATED),
        Column("tool_results_in_range", I64),
        Column("tool_tokens_in_range", I64, ESTIMATED),
        Column("summary_tokens", I64, ESTIMATED),
        Column("summary_ratio", F64, ESTIMATED),
        Column("summarizer_prompt_tokens", I64, MEASURED),
        Column("summarizer_output_tokens", I64, MEASURED),
        Column("overlap_with_previous", I64),
        Column("overlap_seconds", F64),
        Column("retained_events_after", I64),
        Column("retained_tokens_after", I64, ESTIMATED),
        Column("next_call_id", S),
        Column("summary_in_next_request", B, "inferred (window reconstruction)"),
        Column("raw_in_range_sent_next", I64, "inferred (window reconstruction)"),
        Column("next_request_tokens_estimated", I64, ESTIMATED),
        Column("trigger", S, help="Claude Code: what started the compaction (auto, manual)"),
        Column(
            "pre_tokens",
            I64,
            LOGGED,
            help="Claude Code: the context size it logged at the boundary (preTokens)",
        ),
    ),
    table=(
        "session_id",
        "appended_after_turn",
        "start_timestamp",
        "end_timestamp",
        "raw_events_in_range",
        "tool_results_in_range",
        "tool_tokens_in_range",
        "summary_tokens",
        "summary_ratio",
        "overlap_with_previous",
        "retained_events_after",
        "summary_in_next_request",
        "raw_in_range_sent_next",
        "compaction_event_id",
    ),
    totals=(
        "raw_events_in_range",
        "tool_results_in_range",
        "tool_tokens_in_range",
        "summary_tokens",
    ),
    footnote="in range: still stored (compaction deletes nothing); *_next: what the next "
    "call's request held, reconstructed; tokens estimated from characters",
    command="compaction",
)

COMPACTION_SESSIONS = Spec(
    "compaction_sessions",
    (
        Column("session_id", S),
        Column("compactions", I64),
        epoch("last_range_end"),
        Column("retained_events_after", I64),
        Column("retained_tokens_after", I64, ESTIMATED),
        Column("largest_retained_tool_result", S),
        Column("largest_retained_result_tokens", I64, ESTIMATED),
        Column("threshold_tokens", I64),
        Column("calls_over_threshold", I64, "measured where usage exists, else estimated"),
        Column("over_threshold_despite_compaction", I64),
        Column("compaction_never_fired", B),
    ),
    table=(
        "session_id",
        "compactions",
        "last_range_end",
        "retained_events_after",
        "retained_tokens_after",
        "largest_retained_tool_result",
        "largest_retained_result_tokens",
        "calls_over_threshold",
        "over_threshold_despite_compaction",
        "compaction_never_fired",
    ),
    totals=("compactions", "retained_events_after", "calls_over_threshold"),
    footnote="retained: raw events stored after the last range (what ADK's filters let "
    "through is sent verbatim); *_tokens: estimated from characters",
    command="compaction --by-session",
)

# ---------------------------------------------------------------------------
# Query plans on an ADK PostgreSQL database
# ---------------------------------------------------------------------------

PLAN_LOOKUPS = Spec(
    "plan_lookups",
    (
        Column("name", S),
        Column("kind", S),  # catalogue | loader | query
        Column("sql", S),  # as passed to psycopg: %(name)s placeholders
        Column("params", S),  # JSON object: the bound values
        Column("top_node", S),
        Column(
            "total_cost",
            F64,
            "estimated (the planner's)",
            help="PostgreSQL's planner: the lookup's total cost",
        ),
        Column(
            "estimated_rows",
            I64,
            "estimated (the planner's)",
            help="PostgreSQL's planner: rows the top node returns",
        ),
        Column("uses_index", B),
        Column("indexes_used", pl.List(S)),
        Column("seq_scan_relations", pl.List(S)),
        Column("relation_rows", S),  # JSON object: relation -> pg_class.reltuples
        Column("scans", S),  # JSON list: every scan node
        Column("suggested_index", S),
        Column("hypothetical_cost", F64, "estimated (the planner's, hypothetical index)"),
        Column("hypothetical_uses_index", B),
        Column(
            "actual_ms",
            F64,
            "measured (--analyze)",
            help="with `--analyze`: the lookup's execution time, inside a rolled-back READ "
            "ONLY transaction",
        ),
        Column("actual_rows", I64),
        Column("advice", S),
    ),
    table=(
        "name",
        "top_node",
        "total_cost",
        "estimated_rows",
        "uses_index",
        "indexes_used",
        "seq_scan_relations",
        "hypothetical_cost",
        "advice",
    ),
    json_columns=("params", "scans", "relation_rows"),
    command="plan",
)

PLAN_INDEXES = Spec(
    "plan_indexes",
    (Column("table", S), Column("name", S), Column("definition", S)),
    command="plan",
)

# ---------------------------------------------------------------------------
# Fidelity: rebuilt windows against ADK's traces of the same requests
# ---------------------------------------------------------------------------

REBUILT = "inferred (window reconstruction)"

FIDELITY = Spec(
    "fidelity",
    (
        Column("session_id", S),
        Column("call_id", S),
        Column("turn", I64),
        Column("agent", S),
        Column("kind", S),
        Column(
            "rules",
            S,
            help="the ADK release whose request assembly rebuilt the window, and how it is "
            "known: `(given)` at ingest, `(traced)`, `(inferred)` from the rows, `(assumed)` "
            "when nothing says",
        ),
        Column("traced_responses", pl.List(S), TRACED),
        Column("rebuilt_responses", pl.List(S), REBUILT),
        Column(
            "responses_exact",
            B,
            help="the rebuilt window holds exactly the function responses (by tool name) "
            "the traced request held",
        ),
        Column(
            "traced_chars",
            I64,
            TRACED,
            help="characters of the traced request's contents, by the definition of `chars`",
        ),
        Column("rebuilt_chars", I64, REBUILT),
        Column("chars_diff", I64, REBUILT),
        Column("chars_diff_pct", F64, REBUILT),
        Column("within_2pct", B, help="rebuilt within 2% of the traced characters"),
        Column("traced_user", I64, TRACED),
        Column("traced_model", I64, TRACED),
        Column("traced_tool", I64, TRACED),
        Column("rebuilt_user", I64, REBUILT),
        Column("rebuilt_model", I64, REBUILT),
        Column("rebuilt_tool", I64, REBUILT),
        Column("differing", S),
        Column("system_chars", I64, TRACED),
        Column("tools_chars", I64, TRACED),
        Column("input_tokens", I64, MEASURED),
        Column("adk_version", S),
    ),
    table=(
        "session_id",
        "turn",
        "agent",
        "rules",
        "responses_exact",
        "traced_chars",
        "rebuilt_chars",
        "chars_diff_pct",
        "within_2pct",
        "differing",
        "call_id",
    ),
    totals=("traced_chars", "rebuilt_chars"),
    footnote="traced: ADK's own trace of the request (sizes by the `chars` definition); "
    "rebuilt: the window reconstruction; roles as the request gave them (another agent's "
    "content is user text)",
)

# ---------------------------------------------------------------------------
# Cost: usage priced (cost/, docs/cost.md)
# ---------------------------------------------------------------------------

_COST_SOURCE = (
    "priced (measured usage x a dated price), range (cache writes or thinking not stored, "
    "or an output count that is a streaming placeholder: low..high), inferred (a "
    "compaction's summarizer, which names no model, priced as its session's main model), "
    "estimated (no usage stored: input from the window's "
    "characters, output not counted), failed (a failed request with no usage: not "
    "billed, 0), copied (a response a Claude Code transcript copied from another session, "
    "a resumed one's history: billed in that session, 0 here) or unknown (no price: no "
    "amount, never 0)"
)
_LOW = Column(
    "cost_usd_low",
    USD,
    "see cost_source",
    help="billed cost, USD, exact: the lower bound (no cache writes; the thinking of a "
    "Claude call counted once)",
)
_HIGH = Column(
    "cost_usd_high",
    USD,
    "see cost_source",
    help="billed cost, USD, exact: the upper bound (every uncached input token written to "
    "the cache at the write rate; a Claude call's thinking added to its output); equal to "
    "the low bound when the usage leaves nothing unknown",
)

# a priced call's identity, first in the frames of its rows (cost --by call, cache)
_CALL_KEYS = (
    Column("app_name", S),
    Column("user_id", S),
    Column("session_id", S),
    Column("call_id", S),
    Column("call_index", I64),
    Column("turn", I64),
    Column("invocation_id", S),
    Column("agent", S),
)
COST_CALLS = Spec(
    "cost_calls",
    (
        *_CALL_KEYS,
        Column("kind", S),
        epoch("started_at"),
        Column("day", pl.Date, help="the call's UTC day: the day its price is looked up for"),
        Column("model", S),
        Column("provider", S),
        Column("price_model", S, help="the model the price list prices (an alias may differ)"),
        Column("price_source", S, help="genai-prices and its version, or the override entry"),
        Column("tier_above", I64, help="the long-context tier the call paid: input tokens "
               "above which all of it is billed at that tier's rates (0: the base rates)"),
        Column("usage_convention", S, help="how the provider's usage is read: `gemini` "
               "(prompt includes cached; output = candidates + thoughts; tool-use prompt "
               "added), `claude` (prompt = uncached + cache reads + writes), `other`"),
        Column("input_tokens", I64, "measured (estimated where cost_source is estimated)"),
        Column("cache_read_tokens", I64, MEASURED),
        Column("output_tokens", I64, MEASURED),
        Column("input_tokens_unsure", I64, "measured (estimated where cost_source is "
               "estimated)", help="a Claude call stored by ADK before 2.7: its cache reads, "
               "which that release's native path left out of the prompt count and "
               "LiteLLM's left in; the high bound reads them beside it. A call without usage "
               "whose session's ADK release is not known: how much more the highest "
               "estimate its possible releases give is than the lowest (`input_tokens`)"),
        Column("output_tokens_unsure", I64, "measured (estimated for a placeholder)",
               help="a Claude call's thoughts: billed output under ADK's native path, "
               "already inside candidates under LiteLLM's; and a Claude Code 2.1 response "
               "whose final usage was never written (its output count a streaming "
               "placeholder): its content's estimated tokens beyond it; counted in the high "
               "bound only"),
        Column("cache_write_tokens", I64, "see cache_write_source", help="cache writes, "
               "where a Claude Code transcript measured them or a LiteLLM payload or a span "
               "logged the request's (ADK stores none): both bounds use them"),
        Column("cache_write_1h_tokens", I64, MEASURED, help="of them, those written for an "
               "hour (a Claude Code transcript's split), priced at the 1-hour write rate; the "
               "rest at the 5-minute rate"),
        Column("cache_write_source", S, help="which record: `transcript (measured)` (a "
               "Claude Code transcript), `litellm (id)` / `otel-span (id)` (logged, matched "
               "by session and event id) or `litellm (near)` / `otel-span (near)` (logged, "
               "by model, start within 5 s and prompt tokens within 1%)"),
        Column("input_usd_per_mtok", USD, PRICED),
        Column("cache_read_usd_per_mtok", USD, PRICED),
        Column("cache_write_usd_per_mtok", USD, PRICED),
        Column("cache_write_1h_usd_per_mtok", USD, PRICED),
        Column("output_usd_per_mtok", USD, PRICED),
        Column("cache_read_usd_low", USD, PRICED, help="the low bound's parts, which add "
               "up to it: cache reads; uncached input at the input rate; cache writes (where "
               "writing is cheaper than not); output"),
        Column("uncached_input_usd_low", USD, PRICED),
        Column("cache_write_usd_low", USD, PRICED),
        Column("output_usd_low", USD, PRICED),
        Column("cache_read_usd_high", USD, PRICED, help="the high bound's parts: the same, "
               "with every uncached input token written where writing costs more, and a "
               "Claude call's thinking in its output"),
        Column("uncached_input_usd_high", USD, PRICED),
        Column("cache_write_usd_high", USD, PRICED),
        Column("output_usd_high", USD, PRICED),
        Column("request_usd", USD, PRICED, help="a fee per request where the price has one"),
        _LOW,
        _HIGH,
        Column("cost_source", S, help=_COST_SOURCE),
        Column("unknown_reason", S),
        Column("copied_from", S, help="the session that holds the response this call copies "
               "(the same message and request id): it is billed there"),
    ),
    table=(
        "call_index",
        "turn",
        "agent",
        "kind",
        "started_at",
        "model",
        "input_tokens",
        "cache_read_tokens",
        "output_tokens",
        "cost_usd_low",
        "cost_usd_high",
        "cost_source",
    ),
    totals=("input_tokens", "cache_read_tokens", "output_tokens", "cost_usd_low",
            "cost_usd_high"),  # fmt: skip
    command="cost SESSION --by call",
)

COST_BY = ("session", "day", "agent", "model", "turn", "app")
COST_KEYS: dict[str, tuple[Column, ...]] = {
    "session": (Column("session_id", S), Column("app_name", S), Column("user_id", S)),
    "day": (Column("day", pl.Date),),
    "agent": (Column("app_name", S), Column("agent", S)),
    "model": (Column("model", S), Column("provider", S), Column("price_model", S)),
    "turn": (Column("session_id", S), Column("turn", I64), Column("invocation_id", S),
             Column("app_name", S), Column("user_id", S)),  # fmt: skip
    "app": (Column("app_name", S),),
}
_COST_FIGURES = (
    Column("calls", I64),
    Column("input_tokens", I64, "measured (estimated for estimated calls)"),
    Column("cache_read_tokens", I64, MEASURED),
    Column("cache_write_tokens", I64, "measured or logged", help="cache writes, where every "
           "call's are known (measured by a Claude Code transcript, logged by a LiteLLM "
           "payload or a span); empty when one call's are not (ADK stores none)"),
    Column("output_tokens", I64, MEASURED),
    _LOW,
    _HIGH,
    Column("cost_source", S, help="the calls' cost_source when they share one, else mixed"),
    Column("priced_calls", I64),
    Column("range_calls", I64),
    Column("inferred_calls", I64),
    Column("estimated_calls", I64),
    Column("failed_calls", I64),
    Column("unknown_calls", I64, help="calls with no price: not in the cost, never 0"),
    Column("copied_calls", I64, help="responses copied from another session (a resumed "
           "Claude Code session's history): billed, and counted, there"),
    Column("price_source", S),
)


def cost_spec(by: str) -> Spec:
    """`forensics cost --by BY`: the group's key columns, then the same figures."""
    keys = COST_KEYS[by]
    hidden = ("user_id", "invocation_id", "price_model") + (("app_name",) if by == "turn" else ())
    shown = [c.name for c in keys if c.name not in hidden]
    return Spec(
        "cost",
        (*keys, *_COST_FIGURES),
        table=(*shown, "calls", "input_tokens", "cache_read_tokens", "cache_write_tokens",
               "output_tokens", "cost_usd_low", "cost_usd_high", "cost_source",
               "unknown_calls"),  # fmt: skip
        totals=("calls", "input_tokens", "cache_read_tokens", "cache_write_tokens",
                "output_tokens", "cost_usd_low", "cost_usd_high", "unknown_calls"),  # fmt: skip
        command=f"cost --by {by}",
    )


COST = cost_spec("session")

# `cost --ccusage-compatible`: ccusage's totals, its fields and rules (cost/ccusage.py)
_CCUSAGE_FIGURES = (
    Column("input_tokens", I64, MEASURED, help="uncached input (ccusage's inputTokens): "
           "usage.input_tokens, one entry per message and request id"),
    Column("output_tokens", I64, MEASURED, help="the largest output count a message's "
           "lines carried (ccusage keeps the entry with the larger token total)"),
    Column("cache_creation_tokens", I64, MEASURED, help="cache writes as ccusage counts "
           "them: the 5-minute and 1-hour split where the line has one, else "
           "cache_creation_input_tokens"),
    Column("cache_read_tokens", I64, MEASURED),
    Column("total_tokens", I64, MEASURED, help="the four counts summed, as ccusage does"),
    Column("cost_usd", USD, "priced (ccusage's rules)", help="each entry at ccusage's "
           "price table under its rules: a line's costUSD if it has one, else each field on "
           "its own with its tokens above 200,000 at the above-200k rate, 1-hour writes at "
           "2x input, a fast request times its multiplier; a model without a price, or a fast "
           "request without a known multiplier, at 0 (unpriced_entries); not what the "
           "provider bills: `cost` without this flag"),
    Column("entries", I64, help="usage entries counted (ccusage's: model responses, failed "
           "requests' zero usage included)"),
    Column("unpriced_entries", I64, help="entries whose model the table does not price (or a fast "
           "request, without a ccusage install: genai-prices has no multiplier): "
           "ccusage counts them at 0"),
    Column("models", S, help="the models of the entries (a fast request as <model>-fast)"),
    Column("price_keys", S, help="the price-table entries that priced them"),
    Column("price_source", S, help="ccusage's own table (its version and binary), or "
           "genai-prices under its rules when no ccusage install was found"),
)  # fmt: skip
_CCUSAGE_SHOWN = ("input_tokens", "output_tokens", "cache_creation_tokens",
                  "cache_read_tokens", "total_tokens", "cost_usd")  # fmt: skip
COST_CCUSAGE_DAY = Spec(
    "cost_ccusage",
    (Column("day", pl.Date, help="the UTC day of the entry's own line (ccusage -z UTC)"),
     *_CCUSAGE_FIGURES),  # fmt: skip
    table=("day", *_CCUSAGE_SHOWN, "models"),
    totals=_CCUSAGE_SHOWN,
    command="cost --by day --ccusage-compatible",
)
COST_CCUSAGE_SESSION = Spec(
    "cost_ccusage",
    (
        Column("project_path", S, help="ccusage's project: the folder its file is in"),
        Column("session_id", S, help="ccusage's session: its file's name (a subagent's: its "
               "parent session's folder; a 2.0 agent file: its own name)"),
        *_CCUSAGE_FIGURES,
        epoch("first_activity"),
        epoch("last_activity"),
    ),  # fmt: skip
    table=("project_path", "session_id", *_CCUSAGE_SHOWN, "models"),
    totals=_CCUSAGE_SHOWN,
    command="cost --by session --ccusage-compatible",
)

COST_SHARE = Spec(
    "cost_share",
    (
        Column("component", S, help="cache reads, cache writes, uncached input, output, "
               "total; and the tool-output slice (part of the input above)"),
        Column("usd_low", USD, "see cost_source", help="the component under the low bound"),
        Column("share_low", F64, "see cost_source", help="percent of the low total"),
        Column("usd_high", USD, "see cost_source"),
        Column("share_high", F64, "see cost_source"),
        Column("cost_source", S),
        Column("price_source", S),
    ),
    table=("component", "usd_low", "share_low", "usd_high", "share_high", "cost_source"),
    command="cost --share",
)

# `forensics cache`: the prompt cache, call by call (queries/cost/cache_calls.sql)
_PROMPT_SPLIT = (
    Column("prompt_tokens", I64, MEASURED, help="the request's whole prompt, as the "
           "provider billed it: cache reads, cache writes and uncached input together"),
    Column("cache_read_tokens", I64, MEASURED),
    Column("cache_write_tokens", I64, "measured or logged", help="cache writes where a "
           "record gives them (a Claude Code transcript, a LiteLLM payload, a span); empty "
           "where none does (ADK stores none)"),
    Column("cache_write_1h_tokens", I64, MEASURED, help="of them, those written for an hour "
           "(the rest for 5 minutes)"),
    Column("uncached_tokens", I64, MEASURED, help="the prompt neither read nor written; "
           "empty where the writes are unknown"),
    Column("hit_rate", F64, MEASURED, help="cache reads over the prompt"),
)
_RANGED = "priced (a range where writes are unknown)"
_SAVED = (
    Column("saved_usd", USD, PRICED, help="what the cache reads saved: their tokens at the "
           "uncached input rate less the read rate, USD, exact"),
)
_NET_SAVED = (
    Column("net_saved_usd_low", USD, _RANGED,
           help="saved_usd less what the writes cost above the uncached rate; low: every "
           "unread token written where the writes are unknown"),
    Column("net_saved_usd_high", USD, _RANGED,
           help="the same, high: no token written where the writes are unknown"),
)
_BREAK_COST = (
    Column("break_cost_usd_low", USD, _RANGED,
           help="what the break's tokens cost, written or sent uncached, above reading them "
           "(the cheaper of the two where the writes are unknown)"),
    Column("break_cost_usd_high", USD, _RANGED,
           help="the same, the dearer of the two where the writes are unknown"),
)
_UNREAD = (
    Column("unread_write_tokens", I64, INFERRED, help="cache writes no later call of the "
           "thread read: its next call read less than this call's reads and writes, used "
           "another model or came after they lived (5 minutes, an hour for 1-hour writes), "
           "or there was none; empty where the writes are unknown"),
    Column("unread_write_usd_low", USD, PRICED, help="what writing them cost above sending "
           "them uncached (both lifetimes written: the cheaper rate)"),
    Column("unread_write_usd_high", USD, PRICED, help="the same (both lifetimes written: the "
           "dearer rate)"),
)
CACHE_CALLS = Spec(
    "cache_calls",
    (
        *_CALL_KEYS,
        Column("branch", S, help="the thread's branch (a Claude Code subagent's sidechain); "
               "a thread is one agent's requests in one session and branch"),
        epoch("started_at"),
        Column("day", pl.Date),
        Column("model", S),
        *_PROMPT_SPLIT,
        Column("cache_write_source", S),
        *_SAVED,
        Column("write_premium_usd_low", USD, _RANGED,
               help="what the unread tokens cost above the uncached input rate (the writes' "
               "surcharge); low: none written where the writes are unknown"),
        Column("write_premium_usd_high", USD, _RANGED,
               help="the same, high: every unread token written where the writes are unknown"),
        *_UNREAD,
        Column("previous_call_id", S, help="the thread's previous call"),
        Column("gap_s", F64, MEASURED, help="seconds since the thread's previous call (the "
               "times each response was stored)"),
        Column("prefix_tokens", I64, INFERRED, help="what the previous call left cached: its "
               "reads plus writes where its writes are known, else its whole prompt; at most "
               "this call's prompt"),
        Column("is_break", B, INFERRED, help="a prefix break: this call read at least 1,024 "
               "tokens and 10% of prefix_tokens fewer than the prefix"),
        Column("break_tokens", I64, INFERRED, help="the prefix's tokens this call did not read"),
        *_BREAK_COST,
        Column("cause", S, "see cause_source", help="what the records show broke the prefix, "
               "the first that applies: `compaction` (a compaction was appended between the "
               "calls), `model` (another model, another cache), `system` / `tools` (the "
               "traced requests' system instruction / tool declarations differ), `history` "
               "(the previous traced request's contents are not where this one's begin: an "
               "earlier message rewritten or removed), `ttl` (the "
               "calls further apart than the cache lives: 5 minutes, an hour after a 1-hour "
               "write), else `unexplained`"),
        Column("cause_source", S, help="`measured` (compaction, model: stored), `traced` "
               "(system, tools, history: ADK's traces of both requests), `inferred` (ttl: "
               "from the measured times), empty for unexplained"),
        Column("cause_detail", S, TRACED, help="system / tools: the character the two "
               "requests' texts first differ at, with 50 characters around it before and now "
               "(of the first 2,000 kept of each); history: the first content part the "
               "previous request sent that this one does not send as it was"),
        Column("cost_source", S),
        Column("price_source", S),
    ),
    table=("session_id", "call_index", "agent", "model", "prompt_tokens", "cache_read_tokens",
           "cache_write_tokens", "hit_rate", "saved_usd", "gap_s", "break_tokens",
           "break_cost_usd_low", "break_cost_usd_high", "cause"),  # fmt: skip
    totals=("prompt_tokens", "cache_read_tokens", "cache_write_tokens", "saved_usd",
            "break_tokens", "break_cost_usd_low", "break_cost_usd_high"),  # fmt: skip
    command="cache --by call",
)
CACHE_KEYS: dict[str, tuple[Column, ...]] = {
    "session": (Column("session_id", S), Column("app_name", S), Column("user_id", S)),
    "turn": (Column("session_id", S), Column("turn", I64), Column("invocation_id", S),
             Column("app_name", S), Column("user_id", S)),  # fmt: skip
    "agent": (Column("app_name", S), Column("agent", S)),
    "day": (Column("day", pl.Date),),
}


def cache_spec(by: str) -> Spec:
    """`forensics cache --by BY` (not call): the group's key columns, then its sums."""
    keys = CACHE_KEYS[by]
    shown = [c.name for c in keys if c.name not in ("user_id", "invocation_id")]
    return Spec(
        "cache",
        (
            *keys,
            Column("calls", I64),
            *_PROMPT_SPLIT,
            *_SAVED,
            *_NET_SAVED,
            *_UNREAD,
            Column("breaks", I64, INFERRED, help="prefix breaks (cache --by call's is_break)"),
            Column("break_tokens", I64, INFERRED),
            *_BREAK_COST,
            Column("break_causes", S, help="each cause with its breaks, the most first"),
            Column("unpriced_calls", I64, help="calls with no price: their money is not in "
                   "the sums, which are then empty"),
        ),
        table=(*shown, "calls", "prompt_tokens", "cache_read_tokens", "cache_write_tokens",
               "hit_rate", "saved_usd", "unread_write_tokens", "breaks", "break_tokens",
               "break_cost_usd_low", "break_cost_usd_high", "break_causes"),  # fmt: skip
        totals=("calls", "prompt_tokens", "cache_read_tokens", "cache_write_tokens",
                "saved_usd", "unread_write_tokens", "breaks", "break_tokens",
                "break_cost_usd_low", "break_cost_usd_high"),  # fmt: skip
        command=f"cache --by {by}",
    )

COST_TOOL_CALLS = Spec(
    "cost_tool_calls",
    (
        Column("app_name", S),
        Column("user_id", S),
        Column("session_id", S),
        Column("function_call_id", S),
        Column("tool_name", S),
        Column("turn", I64),
        Column("result_tokens_estimated", I64, ESTIMATED),
        Column("sends", I64),
        Column("first_send_usd_low", USD, ESTIMATED),
        Column("first_send_usd_high", USD, ESTIMATED),
        Column("resend_usd_low", USD, ESTIMATED),
        Column("resend_usd_high", USD, ESTIMATED),
        Column("sent_in_turn_usd_low", USD, ESTIMATED, help="every send of the result in "
               "the turn that asked for it, the first included: the money of growth's "
               "`resent_tokens_in_turn`"),
        Column("sent_in_turn_usd_high", USD, ESTIMATED),
        Column("unpriced_sends", I64),
        Column("price_source", S),
    ),
    table=("session_id", "turn", "tool_name", "function_call_id", "result_tokens_estimated",
           "sends", "first_send_usd_low", "resend_usd_low", "sent_in_turn_usd_low",
           "unpriced_sends"),  # fmt: skip
    totals=("result_tokens_estimated", "sends", "first_send_usd_low", "resend_usd_low",
            "sent_in_turn_usd_low", "unpriced_sends"),  # fmt: skip
    command="cost --by tool-call",
)

COST_TOOLS = Spec(
    "cost_tools",
    (
        Column("app_name", S),
        Column("tool_name", S),
        Column("results", I64),
        Column("result_tokens_estimated", I64, ESTIMATED),
        Column("sends", I64, help="calls that carried a result of the tool: its first send "
               "and every re-send"),
        Column("first_send_usd_low", USD, ESTIMATED, help="result tokens at the input rate "
               "of the call that first carried them (high: at the cache write rate)"),
        Column("first_send_usd_high", USD, ESTIMATED),
        Column("resend_usd_low", USD, ESTIMATED, help="result tokens at each later "
               "carrying call's own input price per token (its cache reads and uncached "
               "input blended)"),
        Column("resend_usd_high", USD, ESTIMATED),
        Column("cost_usd_low", USD, ESTIMATED),
        Column("cost_usd_high", USD, ESTIMATED),
        Column("unpriced_sends", I64, help="sends in calls with no price: not in the cost"),
        Column("price_source", S),
    ),
    totals=("results", "result_tokens_estimated", "sends", "first_send_usd_low",
            "first_send_usd_high", "resend_usd_low", "resend_usd_high", "cost_usd_low",
            "cost_usd_high", "unpriced_sends"),  # fmt: skip
    table=("app_name", "tool_name", "results", "result_tokens_estimated", "sends",
           "first_send_usd_low", "resend_usd_low", "cost_usd_low", "cost_usd_high",
           "unpriced_sends"),  # fmt: skip
    command="cost --by tool",
)

PRICES = Spec(
    "prices",
    (
        Column("model", S),
        Column("day", pl.Date),
        Column("provider", S),
        Column("price_model", S),
        Column("tier_above", I64),
        Column("input_usd_per_mtok", USD, PRICED),
        Column("cache_read_usd_per_mtok", USD, PRICED),
        Column("cache_write_usd_per_mtok", USD, PRICED, help="the 5-minute write rate"),
        Column("cache_write_1h_usd_per_mtok", USD, PRICED),
        Column("output_usd_per_mtok", USD, PRICED),
        Column("requests_usd_per_k", USD, PRICED, help="a fee per 1,000 requests, billed "
               "once per call (0: none)"),
        Column("since", pl.Date, help="the day this price started (empty: as long as the "
               "list knows)"),
        Column("price_source", S),
        Column("note", S),
    ),
    command="prices",
)


# ---------------------------------------------------------------------------
# Logged records (OpenSearch): context failures, what a mapping reads
# ---------------------------------------------------------------------------

FAILURES = Spec(
    "failures",
    (
        Column("failure", I64, help="the failure's number, in time order"),
        epoch("failed_at"),
        Column("session_id", S),
        Column("app_name", S),
        Column("user_id", S),
        Column("agent", S),
        Column("model", S),
        Column(
            "evidence",
            S,
            help="the records that saw this failure, merged into one: `otel-log`, "
            "`otel-span`, `litellm`, `mapping:<name>` (logged) and `adk` or `claude-code` "
            "(the session's stored event); records naming the same event, or of one "
            "session (else one trace) within 5 s naming no other event, are one failure",
        ),
        Column("error_code", S),
        Column("error_text", S),
        Column(
            "logged_tokens",
            I64,
            help="the context-size figure given at failure: a logged field, else the "
            "number in the error text; `logged_tokens_source` says whose (`logged`: the "
            "application's logs or traces; `measured`: the provider's error text as ADK "
            "stored it)",
        ),
        Column("logged_tokens_source", S),
        Column("context_limit", I64, LOGGED, help="the model maximum the error named"),
        Column(
            "responses_before",
            I64,
            LOGGED,
            help="the founding document's turn: completed model responses logged in the "
            "session before the failure (empty when the session has no logged calls)",
        ),
        Column("turn", I64, help="ADK's turn index of the failing call, when the session "
               "is loaded"),
        Column("call_id", S, help="the failing call's event id in the loaded ADK session"),
        Column(
            "window_tokens",
            I64,
            help="the failing call's rebuilt window (`occupancy` in `forensics calls`; "
            "`window_tokens_source` says how it is known)",
        ),
        Column("window_tokens_source", S),
        Column(
            "cumulative_input",
            I64,
            help="the turn's cumulative input through the failing call (its own window "
            "included)",
        ),
        Column("cumulative_input_source", S),
        Column(
            "verdict",
            S,
            help="which the logged figure is: `window` or `cumulative` (within 5% of it "
            "and nearer than the other), `both` (a turn of one call: they are equal), "
            "`neither`; `no session` when the ADK session is not loaded, `no figure` when "
            "nothing gave a size",
        ),
        Column("gap_window_pct", F64, help="(logged - window) / window, in percent"),
        Column("gap_cumulative_pct", F64, help="(logged - cumulative) / cumulative, in percent"),
        Column("cluster", I64, help="the size cluster of its figure (`forensics failures "
               "--by cluster`)"),
        Column("locator", S, help="where the first record of it was read"),
    ),
    table=(
        "failure",
        "failed_at",
        "session_id",
        "agent",
        "evidence",
        "logged_tokens",
        "responses_before",
        "turn",
        "window_tokens",
        "cumulative_input",
        "verdict",
        "cluster",
    ),
    footnote="logged_tokens: the size figure at failure (logged, or the error text's); "
    "verdict: within 5% of the failing call's rebuilt window or of the turn's cumulative "
    "input",
    command="failures",
)

FAILURES_BY_AGENT = Spec(
    "failures_by_agent",
    (
        Column("agent", S),
        Column("failures", I64),
        Column("sessions", I64),
        Column(
            "first_failure_responses_before",
            S,
            LOGGED,
            help="per session, its first failure's `responses_before`: how many sessions "
            "had it at each count (JSON: count -> sessions)",
        ),
        Column(
            "first_failure_turn",
            S,
            help="per session, its first failure's ADK turn: how many sessions at each "
            "(JSON: turn -> sessions)",
        ),
        Column("verdicts", S, help="the failures' verdicts, counted (JSON)"),
    ),
    totals=("failures", "sessions"),
    json_columns=("first_failure_responses_before", "first_failure_turn", "verdicts"),
    command="failures --by agent",
)

FAILURE_CLUSTERS = Spec(
    "failure_clusters",
    (
        Column(
            "cluster",
            I64,
            help="figures sorted: a new cluster starts where the next is more than 25% "
            "above the one before",
        ),
        Column("failures", I64),
        Column("sessions", I64),
        Column("low_tokens", I64),
        Column("median_tokens", I64),
        Column("high_tokens", I64),
        Column("members", S, help="the failures in it (JSON list of their numbers)"),
        Column("verdicts", S),
    ),
    totals=("failures",),
    json_columns=("members", "verdicts"),
    command="failures --by cluster",
)

MAPPING_EXPLAIN = Spec(
    "mapping_explain",
    (
        Column("locator", S),
        Column("shape", S, help="which reader took the document: `otel-span`, "
               "`otel-log`, `litellm`, `mapping:<name>`"),
        Column("kind", S),
        Column("name", S),
        epoch("time"),
        Column("session_id", S),
        Column("invocation_id", S),
        Column("agent", S),
        Column("model", S),
        Column("input_tokens", I64, LOGGED),
        Column("output_tokens", I64, LOGGED),
        Column("cache_read_tokens", I64, LOGGED),
        Column("cache_write_tokens", I64, LOGGED),
        Column("status", S),
        Column("error", S),
        Column("context_failure", B),
        Column("context_tokens", I64, LOGGED),
        Column("tool", S),
        Column("problem", S, help="why the document maps to nothing (it would be skipped)"),
    ),
    table=("locator", "shape", "kind", "session_id", "agent", "model", "input_tokens",
           "context_failure", "context_tokens", "problem"),
    command="ingest opensearch --explain-mapping",
)


# ---------------------------------------------------------------------------
# Tasks and arms: outcomes, cost per successful task, paired arms, break-even
# ---------------------------------------------------------------------------

_TASK_FIGURES = (
    Column("executions", I64, help="outcomes loaded: sessions (or turns) that ran the task"),
    Column("successes", I64),
    Column("success_rate", F64, help="percent of the evaluated executions that succeeded"),
    Column("cost_usd_low", USD, PRICED),
    Column("cost_usd_high", USD, PRICED),
    Column("cost_per_success_usd_low", USD, PRICED, help="the whole cost, failed "
           "executions included (they were billed), over the successful ones"),
    Column("cost_per_success_usd_high", USD, PRICED),
    Column("calls_mean", F64, help="model calls per execution: the trajectory's length "
           "(the cost study's `turns`)"),
    Column("calls_histogram", S, help="executions by their number of model calls (JSON)"),
    Column("turns_mean", F64, help="ADK turns (invocations) per execution"),
    Column("turns_histogram", S),
)
_HISTOGRAMS = ("calls_histogram", "turns_histogram")

TASKS = Spec(
    "tasks",
    (Column("task_id", S), Column("arm", S), *_TASK_FIGURES),
    table=("task_id", "arm", "executions", "successes", "success_rate", "cost_usd_low",
           "cost_usd_high", "cost_per_success_usd_low", "calls_mean", "turns_mean"),
    totals=("executions", "successes", "cost_usd_low", "cost_usd_high"),
    json_columns=_HISTOGRAMS,
    command="tasks",
)

TASK_ARMS = Spec(
    "task_arms",
    (Column("arm", S), Column("tasks", I64), *_TASK_FIGURES),
    table=("arm", "tasks", "executions", "successes", "success_rate", "cost_usd_low",
           "cost_usd_high", "cost_per_success_usd_low", "cost_per_success_usd_high",
           "calls_mean", "calls_histogram"),
    totals=("executions", "successes", "cost_usd_low", "cost_usd_high"),
    json_columns=_HISTOGRAMS,
    command="tasks --by arm",
)

TASK_COMPARE = Spec(
    "task_compare",
    (
        Column("bound", S, help="which cost bound the comparison uses (low, high)"),
        Column("baseline", S),
        Column("arm", S),
        Column("pairs", I64, help="tasks run under both arms"),
        Column("mean_cost_diff_pct", F64, PRICED, help="mean over the pairs of (arm - "
               "baseline) / baseline, each task's mean cost per execution, in percent"),
        Column("ci_low_pct", F64, PRICED, help="its percentile bootstrap interval "
               "(`method`)"),
        Column("ci_high_pct", F64, PRICED),
        Column("cost_per_success_ratio", F64, PRICED, help="the arm's cost per successful "
               "execution over the baseline's"),
        Column("success_rate_baseline", F64),
        Column("success_rate_arm", F64),
        Column("calls_baseline", S, help="the baseline's executions by model calls (JSON)"),
        Column("calls_arm", S),
        Column("unpaired_tasks", S, help="tasks run under one of the arms only: listed, "
               "not compared (JSON)"),
        Column("method", S),
        Column("note", S),
    ),
    table=("bound", "baseline", "arm", "pairs", "mean_cost_diff_pct", "ci_low_pct",
           "ci_high_pct", "cost_per_success_ratio", "success_rate_baseline",
           "success_rate_arm", "note"),
    json_columns=("calls_baseline", "calls_arm", "unpaired_tasks"),
    command="compare",
)

BREAKEVEN = Spec(
    "breakeven",
    (
        Column("agent", S, help="the agent (all: every call, the summarizer's included)"),
        Column("sessions", I64),
        Column("unpriced_calls", I64, help="calls with no price: when any, the money "
               "figures are unknown (never 0)"),
        Column("cost_usd_low", USD, PRICED, help="the bill, low bound"),
        Column("cache_share_pct", F64, PRICED, help="cache reads and writes, percent of it"),
        Column("tool_output_share_pct", F64, ESTIMATED, help="tool results' first sends "
               "(the slice of `cost --share`), percent of it"),
        Column("reduction_pct", F64, help="the cut of the tool-output slice assumed "
               "(`--reduction`)"),
        Column("breakeven_calls", F64, INFERRED, help="s_cache / (r * s_tool): the "
               "trajectory length, in model calls (the cost study's turns), from which the "
               "saving pays for one more call"),
        Column("saving_usd_low", USD, ESTIMATED, help="r times the tool-output slice, over "
               "the whole selection"),
        Column("one_more_call_usd_low", USD, PRICED, help="the mean input cost of a "
               "session's last call: what one more call re-sends, from real calls"),
        Column("calls_paid_for", F64, INFERRED, help="the saving over the cost of one more "
               "call: how many extra calls it pays for before it is lost"),
    ),
    command="breakeven",
)


# ---------------------------------------------------------------------------
# What-if: a tool-output guard replayed on stored history (forensics/whatif/)
# ---------------------------------------------------------------------------

_GUARD = Column("guard", S, help="the guard replayed, as `whatif` was asked for it, and the "
                "chars-per-token its estimate used")
_WHATIF_COST = (
    Column("cost_usd_low", USD, PRICED, help="what the calls cost as they ran, low bound "
           "(`cost`)"),
    Column("cost_usd_high", USD, PRICED),
    Column("counterfactual_usd_low", USD, ESTIMATED, help="the same calls under the guard: "
           "each call's cost less the tokens the guard took out of its request at that call's "
           "blended input price; a prevented failure's call is billed its counterfactual input "
           "at the session's previous call's price (its output is unknown)"),
    Column("counterfactual_usd_high", USD, ESTIMATED),
    Column("saving_usd_low", USD, ESTIMATED, help="cost minus counterfactual: never shown "
           "without `extra_turns_paid_for`"),
    Column("saving_usd_high", USD, ESTIMATED),
)
_WHATIF_TURNS = (
    Column("extra_call_usd_low", USD, ESTIMATED, help="what one more turn (a model call, the "
           "cost study's turn) costs under the guard: the session's last agent call's input "
           "less what the guard took out, its request fee, and the session's mean output per "
           "call, low bound"),
    Column("extra_turns_paid_for", F64, ESTIMATED, help="saving_usd_low over "
           "extra_call_usd_low: how many extra turns the guard may cost (the agent paging for "
           "rows it lost) before the saving is gone"),
)

_ANCHORS = (
    Column("anchors", I64, INFERRED, help="Claude Code: strings of 20 or more characters a "
           "later call of the thread reproduced from this result (a later tool call's "
           "argument, Edit's old_string the canonical case, or the model's text), found "
           "as whole lines or words of it (docs/whatif.md, Anchors); empty: not searched "
           "(another family, or read before store schema 12)"),
    Column("anchors_cut_head_tail", I64, ESTIMATED, help="with --token-cap, of those a "
           "result over the cap loses when cut to the cap's share of its bytes by keeping "
           "its first and last halves (a text guard that knows nothing)"),
    Column("anchors_preserved_head_tail", I64, ESTIMATED),
    Column("anchors_cut_elision", I64, ESTIMATED, help="... when, with the same budget, the "
           "lines that hold anchors are kept and the rest elided with a marker that says "
           "how to fetch them (hindsight: which lines later calls reproduced)"),
    Column("anchors_preserved_elision", I64, ESTIMATED),
)
ANCHOR_COLUMNS = tuple(c.name for c in _ANCHORS)
_ANCHOR_NOTE = ("anchors: strings a later call reproduced from a result (inferred); cut at "
                "the cap by head/tail truncation or an anchor-preserving elision (estimated)")

WHATIF_RESULTS = Spec(
    "whatif_results",
    (
        Column("session_id", S),
        Column("app_name", S),
        Column("user_id", S),
        Column("turn", I64),
        Column("agent", S),
        Column("tool_name", S),
        Column("function_call_id", S),
        Column("payload", S, help="the result's shape: `rows in <key>` (the longest list of "
               "records: a top-level key, or under `result`), `list`, `dict` (no list of "
               "records: sized and kept whole, the founding guard's blind spot), `unsized` "
               "(stored before store schema 9: ingest again with --full)"),
        Column("rows", I64),
        Column("rows_kept", I64, ESTIMATED, help="rows the guard would have let through: the "
               "page (min of --page-size and --row-cap), then with --token-cap the rows that "
               "fit, at least one"),
        Column("fired", B, ESTIMATED, help="the guard cut rows from this result"),
        Column("over_budget", B, ESTIMATED, help="what went out is still over --token-cap: "
               "one row over budget on its own (kept anyway), or a dict sized whole"),
        Column("guard_tokens", I64, ESTIMATED, help="the guard's own estimate of the whole "
               "result: its json.dumps length over --chars-per-token, rounded up"),
        Column("kept_guard_tokens", I64, ESTIMATED, help="the guard's estimate of what it "
               "let through (the founding guard's running sum)"),
        Column("largest_row_guard_tokens", I64, ESTIMATED),
        Column("result_tokens_estimated", I64, ESTIMATED, help="the result in the window, as "
               "`growth` sizes it (its characters over the fitted ratio)"),
        Column("counterfactual_tokens", I64, ESTIMATED, help="what the guard lets through, "
               "sized the same way: the rows kept, and the paging keys it adds"),
        Column("sends", I64, help="model calls that carried the result"),
        Column("saved_input_tokens", I64, ESTIMATED, help="(result - counterfactual) tokens "
               "times the sends: input the guard takes out of later requests"),
        *_ANCHORS,
        _GUARD,
    ),
    table=("session_id", "turn", "tool_name", "payload", "rows", "rows_kept", "fired",
           "over_budget", "guard_tokens", "kept_guard_tokens", "result_tokens_estimated",
           "counterfactual_tokens", "sends", "saved_input_tokens"),  # fmt: skip
    totals=("result_tokens_estimated", "counterfactual_tokens", "saved_input_tokens",
            *ANCHOR_COLUMNS),
    command="whatif --by result",
)

_INVALIDATED = Column(
    "invalidated_tokens", I64, INFERRED, help="placed in the transcript (--placement "
    "transcript): the tokens this request read from the cache beyond where a result it "
    "rewrites begins (the window of the call that asked for it), less what the cut took "
    "out of them, written or sent uncached instead, their cost in counterfactual_*; 0 at "
    "the tool boundary"
)
WHATIF_CALLS = Spec(
    "whatif_calls",
    (
        Column("session_id", S),
        Column("app_name", S),
        Column("user_id", S),
        Column("turn", I64),
        Column("call_id", S),
        Column("agent", S),
        Column("kind", S),
        Column("occupancy", I64, "see occupancy_source", help="the call's window as it ran "
               "(`calls`' occupancy)"),
        Column("occupancy_source", S),
        Column("occupancy_counterfactual", I64, ESTIMATED, help="the same request with the "
               "guard's cuts to the tool results it carried (their characters over the call's "
               "fitted ratio); the trajectory held fixed"),
        Column("results_cut", I64, help="tool results in this request that the guard cut"),
        Column("cumulative_input", I64, "see occupancy_source", help="the turn's input so "
               "far: the sum of its calls' windows, a failed request's included"),
        Column("cumulative_input_counterfactual", I64, ESTIMATED),
        _INVALIDATED,
        *_WHATIF_COST,
        Column("context_limit", I64, help="a failed call's model limit: "
               "--context-limit, else the one its error named"),
        Column("failure", S, help="a failed call under the guard: `prevented` (a context "
               "failure whose counterfactual window fits the limit), `still over`, `limit "
               "unknown`, `not a context failure`"),
        _GUARD,
    ),
    table=("session_id", "turn", "agent", "kind", "occupancy", "occupancy_counterfactual",
           "cumulative_input", "cumulative_input_counterfactual", "cost_usd_low",
           "counterfactual_usd_low", "context_limit", "failure"),  # fmt: skip
    totals=("cost_usd_low", "counterfactual_usd_low"),
    command="whatif --by call",
)

_WHATIF_GROUP = (
    Column("calls", I64),
    Column("results_cut", I64, help="tool results of this group that the guard cut"),
    Column("peak_occupancy", I64, "see occupancy_source"),
    Column("peak_occupancy_counterfactual", I64, ESTIMATED),
    Column("cumulative_input", I64, "see occupancy_source", help="the sum of the calls' "
           "windows (`turns`' cumulative input; a failed request's included)"),
    Column("cumulative_input_counterfactual", I64, ESTIMATED),
    Column("saved_input_tokens", I64, ESTIMATED),
    _INVALIDATED,
    *_WHATIF_COST,
    Column("context_failures", I64, help="failed calls that were context failures"),
    Column("prevented", I64, ESTIMATED, help="of them, those whose counterfactual window "
           "fits the limit"),
    *_WHATIF_TURNS,
    *_ANCHORS,
)
_WHATIF_GROUP_TABLE = ("peak_occupancy", "peak_occupancy_counterfactual", "cumulative_input",
                       "cumulative_input_counterfactual", "saving_usd_low", "context_failures",
                       "prevented", "extra_call_usd_low", "extra_turns_paid_for")  # fmt: skip
_WHATIF_TOTALS = ("calls", "results_cut", "cumulative_input", "cumulative_input_counterfactual",
                  "saved_input_tokens", "cost_usd_low", "cost_usd_high", "counterfactual_usd_low",
                  "counterfactual_usd_high", "saving_usd_low", "saving_usd_high",
                  "context_failures", "prevented", "extra_turns_paid_for",
                  *ANCHOR_COLUMNS)  # fmt: skip
_WHATIF_FOOTNOTE = ("the trajectory is held fixed: the same calls in the same order, each "
                    "request smaller by what the guard took out of the tool results it carried; "
                    "counterfactual_*, saving_*, extra_*: estimated; extra_turns_paid_for: "
                    "the saving over one more model call under the guard")  # fmt: skip

WHATIF_TURNS = Spec(
    "whatif_turns",
    (
        Column("session_id", S),
        Column("app_name", S),
        Column("user_id", S),
        Column("turn", I64, help="the turn (empty: the compaction summarizer's calls)"),
        *_WHATIF_GROUP,
        _GUARD,
    ),
    table=("session_id", "turn", "calls", "results_cut", *_WHATIF_GROUP_TABLE),
    totals=_WHATIF_TOTALS,
    footnote=_WHATIF_FOOTNOTE,
    command="whatif",
)

WHATIF_SESSIONS = Spec(
    "whatif_sessions",
    (
        Column("session_id", S),
        Column("app_name", S),
        Column("user_id", S),
        Column("turns", I64),
        *_WHATIF_GROUP,
        _GUARD,
    ),
    table=("session_id", "turns", "calls", "results_cut", *_WHATIF_GROUP_TABLE),
    totals=("turns", *_WHATIF_TOTALS),
    footnote=_WHATIF_FOOTNOTE,
    command="whatif --by session",
)

GUARDS = Spec(
    "guards",
    (
        Column("app_name", S),
        Column("tool_name", S),
        Column("results", I64),
        Column("payloads", S, help="the results' shapes and how many of each (`whatif`'s "
               "payload)"),
        Column("over_budget", I64, ESTIMATED, help="results whose guard estimate (json.dumps "
               "length over --chars-per-token) is over --budget"),
        Column("max_tokens", I64, ESTIMATED),
        Column("p95_tokens", I64, ESTIMATED, help="the 95th percentile of the results' guard "
               "estimates (nearest rank)"),
        Column("row_guard_silent", I64, ESTIMATED, help="results over the budget that a row "
               "guard of --row-cap rows lets through (as many rows or fewer, or a dict)"),
        Column("dict_payloads", I64, help="results with no list of records: a row guard "
               "reads them as empty"),
        Column("dict_over_budget", I64, ESTIMATED),
        Column("rows_over_budget", I64, ESTIMATED, help="single rows over the budget on their "
               "own: a token cap keeps one anyway"),
        Column("tokens_per_row", I64, ESTIMATED, help="the rows' mean guard estimate"),
        Column("max_row_tokens", I64, ESTIMATED),
        Column("flat_results", I64, help="results whose rows are flat records (one scalar per "
               "column)"),
        Column("json_tokens_per_row", I64, ESTIMATED, help="flat results' rows as json.dumps "
               "writes them, over --chars-per-token, per row"),
        Column("markdown_tokens_per_row", I64, ESTIMATED, help="the same rows as a markdown "
               "table (header and separator line included), per row"),
        Column("markdown_ratio", F64, ESTIMATED, help="json over markdown tokens: how many "
               "times fewer tokens the table takes (the founding document measured about 2.5 "
               "on one tool)"),
        Column("unsized", I64, help="results stored before store schema 9: not sized (ingest "
               "again with --full)"),
        Column("anchored_results", I64, INFERRED, help="results with anchors: strings of 20 "
               "or more characters a later call reproduced from them (Claude Code's Edit "
               "old_string the canonical case), which a cap that cuts them breaks; empty: not "
               "searched (another family, or read before store schema 12)"),
        Column("anchors", I64, INFERRED, help="the anchors in those results (`whatif --by "
               "result` says which a cap would cut)"),
    ),
    table=("tool_name", "results", "payloads", "over_budget", "max_tokens", "p95_tokens",
           "row_guard_silent", "dict_payloads", "rows_over_budget", "tokens_per_row",
           "markdown_ratio"),  # fmt: skip
    totals=("results", "over_budget", "row_guard_silent", "dict_payloads", "dict_over_budget",
            "rows_over_budget", "flat_results", "unsized", "anchored_results",
            "anchors"),  # fmt: skip
    footnote="tokens: the guard's estimate (json.dumps length over --chars-per-token, rounded "
    "up), not the fitted ratio; markdown_ratio: flat rows only",
)


ALL: tuple[Spec, ...] = (
    SESSIONS,
    EVENTS,
    INGESTS,
    INGEST_SKIPS,
    INGEST_RUN,
    CALLS,
    WINDOW,
    GROWTH,
    TURNS,
    COMPACTION_RANGES,
    COMPACTION_SESSIONS,
    PLAN_LOOKUPS,
    PLAN_INDEXES,
    FIDELITY,
    COST_CALLS,
    COST,
    COST_SHARE,
    COST_TOOLS,
    COST_TOOL_CALLS,
    COST_CCUSAGE_DAY,
    COST_CCUSAGE_SESSION,
    CACHE_CALLS,
    cache_spec("session"),
    PRICES,
    FAILURES,
    FAILURES_BY_AGENT,
    FAILURE_CLUSTERS,
    MAPPING_EXPLAIN,
    TASKS,
    TASK_ARMS,
    TASK_COMPARE,
    BREAKEVEN,
    WHATIF_RESULTS,
    WHATIF_CALLS,
    WHATIF_TURNS,
    WHATIF_SESSIONS,
    GUARDS,
)


def field_table() -> str:
    """The README's field table: every column with a `help`, in frame order."""
    lines = ["| field | command | provenance | meaning |", "|---|---|---|---|"]
    commands: dict[Column, list[str]] = {}  # a column two frames share is one row
    for spec in ALL:
        for column in spec.columns:
            if column.help:
                commands.setdefault(column, []).append(spec.command or spec.name)
    for column, where in commands.items():
        shown = column.provenance or "—"
        lines.append(f"| `{column.name}` | {', '.join(where)} | {shown} | {column.help} |")
    return "\n".join(lines) + "\n"
