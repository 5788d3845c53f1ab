"""Task outcomes from files: a team's CSV or JSON, or ADK's own eval results.

- CSV (a header row) or JSON (a list of objects, or `{"outcomes": [...]}`), one row per
  execution: `session_id` (required), `invocation_id` (optional: the execution is one
  turn), `task_id` (required), `arm` (optional), and `success` (true/false, 1/0,
  yes/no, pass/fail, passed/failed) or a `score` with a `threshold` (a column, or the
  loader's `threshold`): success is score >= threshold.
- ADK's `EvalSetResult` JSON, as `adk eval` writes `<name>.evalset_result.json`
  (google.adk.evaluation.eval_result: snake_case from `model_dump_json`, camelCase
  accepted; the legacy double-encoded file, a JSON string holding the JSON, too): each
  eval case result is one execution, its `session_id` the session the eval ran, its
  task `<eval_set_id>/<eval_id>`, its success `final_eval_status` (1 PASSED, 2 FAILED;
  3 NOT_EVALUATED and 4 INFORMATIONAL: not evaluated).

A row that cannot be read is a Skip naming the file and row; the others are read.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import NUMBER_TOO_LONG, SourceError
from ...model import Outcome, Skip
from ...sanitize import not_utf8, storable

_TRUE = {"true", "1", "yes", "y", "pass", "passed", "success", "ok"}
_FALSE = {"false", "0", "no", "n", "fail", "failed", "failure"}
_STATUS = {1: True, 2: False, 3: None, 4: None, "PASSED": True, "FAILED": False,
           "NOT_EVALUATED": None, "INFORMATIONAL": None}  # fmt: skip
ALIASES = {"session": "session_id", "invocation": "invocation_id", "task": "task_id"}
# the columns a row is read from (one named twice is refused: which one was meant?)
_READ = {"session_id", "task_id", "invocation_id", "arm", "success", "score", "threshold"}
FIELD_LIMIT = 16 << 20  # a CSV field's longest (csv's own limit is 128 KB)


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"success is not true or false: {str(value)[:40]!r}")


def _number(value: Any, name: str) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):  # float(True) is 1.0: a flag is no score
        raise ValueError(f"{name} is not a number: {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} is not a number: {str(value)[:40]!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{name} is not a finite number: {value!r}")
    return number


def _text(row: dict[str, Any], name: str) -> str | None:
    value = row.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):  # str(True): 'True'
        raise ValueError(f"{name} is not text: {type(value).__name__}")
    return str(value).strip()


def outcome(
    row: dict[str, Any], source: str, locator: str, arm: str | None, threshold: float | None
) -> Outcome:
    """One row as an Outcome; ValueError says what is wrong with it."""
    row = {ALIASES.get(str(k).strip().lower(), str(k).strip().lower()): v for k, v in row.items()}
    session, task = _text(row, "session_id"), _text(row, "task_id")
    if session is None:
        raise ValueError("no session_id")
    if task is None:
        raise ValueError("no task_id")
    score = _number(row.get("score"), "score")
    given = _number(row.get("threshold"), "threshold")
    limit = given if given is not None else threshold
    if row.get("success") not in (None, ""):
        success: bool | None = _flag(row["success"])
    elif score is not None:
        if limit is None:
            raise ValueError("a score without a threshold: give a threshold column or --threshold")
        success = score >= limit
    else:
        raise ValueError("neither success nor score")
    return Outcome(
        session_id=session,
        invocation_id=_text(row, "invocation_id"),
        task_id=task,
        arm=_text(row, "arm") or arm or "",
        success=success,
        score=score,
        source=source,
        locator=locator,
    )


class _NotJson(SourceError):
    """Text that is not JSON (of a file; or of a string in one, then no eval result)."""


def _parsed(text: str, path: Path) -> Any:
    """`text` (a file's, or the legacy double-encoded one inside it) as JSON; SourceError
    naming the file when it is not JSON (_NotJson), is nested too deeply or holds a
    number too long for Python's json."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise _NotJson(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    except RecursionError:
        raise SourceError(f"{path}: not read: JSON nested too deeply") from None
    except ValueError:
        raise SourceError(f"{path}: not read: {NUMBER_TOO_LONG}") from None


def _eval_results(document: Any, path: Path) -> dict[str, Any] | None:
    if isinstance(document, str):  # the legacy double-encoded file
        try:
            document = _parsed(document, path)
        except _NotJson:  # a string that is no JSON: not an eval result
            return None
    if isinstance(document, dict) and (
        "eval_case_results" in document or "evalCaseResults" in document
    ):
        return document
    return None


def _from_eval(document: dict[str, Any], path: Path, arm: str | None,
               skips: list[Skip]) -> list[Outcome]:  # fmt: skip
    set_id = document.get("eval_set_id") or document.get("evalSetId") or ""
    cases = document.get("eval_case_results") or document.get("evalCaseResults") or []
    found = []
    if not isinstance(cases, list):
        raise SourceError(f"{path}: eval_case_results is {type(cases).__name__}, not a list of "
                          "eval case results")  # fmt: skip
    for index, case in enumerate(cases):
        locator = f"{storable(str(path))}: eval_case_results[{index}]"
        if not isinstance(case, dict):
            skips.append(Skip(locator, "an eval case result is not an object"))
            continue
        status = case.get("final_eval_status", case.get("finalEvalStatus"))
        if isinstance(status, bool) or not isinstance(status, int | str) or status not in _STATUS:
            skips.append(Skip(locator, f"final_eval_status is not an EvalStatus: {status!r}"))
            continue
        session = case.get("session_id") or case.get("sessionId")
        eval_id = case.get("eval_id") or case.get("evalId") or ""
        if not isinstance(session, str) or not session:
            skips.append(Skip(locator, "no session_id: the eval ran no session"))
            continue
        if not isinstance(eval_id, str) or not eval_id or not isinstance(set_id, str):
            skips.append(Skip(locator, "no eval_id: the task cannot be named"))
            continue
        found.append(Outcome(session, None, f"{set_id}/{eval_id}", arm or "", _STATUS[status],
                             None, "adk-eval", locator))  # fmt: skip
    return found


def read_outcomes(
    path: Path,
    skips: list[Skip],
    *,
    arm: str | None = None,
    threshold: float | None = None,
    eval_only: bool = False,
) -> list[Outcome]:
    """The outcomes of one file; SourceError when the file cannot be read at all (or,
    with `eval_only`, is not an ADK EvalSetResult)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise SourceError(f"cannot read {path}: {not_utf8(e)}") from None
    except OSError as e:
        raise SourceError(f"cannot read {path}: {e.strerror or e}") from e
    if eval_only and path.suffix.lower() == ".csv":
        raise SourceError(f"{path}: not an ADK EvalSetResult (--adk-eval): a CSV file")
    place = storable(str(path))  # (each row's, stored: any byte of the name escaped)
    if path.suffix.lower() == ".csv":
        read = [0]  # lines the reader took, a row that fails included (line_num is not)

        def counted() -> Iterator[str]:
            for line in io.StringIO(text, newline=""):
                read[0] += 1
                yield line

        reader = csv.DictReader(counted())
        named = [ALIASES.get(f.strip().lower(), f.strip().lower()) for f in reader.fieldnames or []]
        twice = sorted({n for n in named if n in _READ and named.count(n) > 1})
        if twice:  # (csv keeps the last of a repeated column: which one was meant?)
            raise SourceError(
                f"{path}:1: the header names {twice[0]} more than once",
                hint="keep one column of each name (session_id, task_id, arm, success, score)",
            )
        names = set(named)
        if not {"session_id", "task_id"} <= names:
            raise SourceError(
                f"{path}:1: the header names no session_id and task_id columns "
                f"(found: {', '.join(reader.fieldnames or []) or 'nothing'})",
                hint="the first line names the columns: session_id,task_id,arm,success",
            )
        rows: list[tuple[str, Any]] = []
        limit = csv.field_size_limit(FIELD_LIMIT)  # (csv's own, 128 KB: a long note)
        try:
            for row in reader:
                rows.append((f"{place}:{reader.line_num}", row))
        except csv.Error as e:  # a field past FIELD_LIMIT: where its reading stopped, the
            # rest unread (reading on would start inside the field: its lines as rows)
            skips.append(Skip(f"{place}:{read[0]}", f"not read from here on: {e}"))
        finally:
            csv.field_size_limit(limit)
        source = "csv"
    else:
        document = _parsed(text, path)
        results = _eval_results(document, path)
        if results is not None:
            return _from_eval(results, path, arm, skips)
        if eval_only:
            raise SourceError(
                f"{path}: not an ADK EvalSetResult (--adk-eval): no eval_case_results"
            )
        if isinstance(document, dict) and isinstance(document.get("outcomes"), list):
            document = document["outcomes"]
        if not isinstance(document, list):
            raise SourceError(
                f"{path}: not outcomes: expected a CSV, a JSON list of rows, "
                "{\"outcomes\": [...]}, or an ADK EvalSetResult"
            )
        rows = [(f"{place}: [{index}]", row) for index, row in enumerate(document)]
        source = "json"
    found = []
    for locator, row in rows:
        if not isinstance(row, dict):
            skips.append(Skip(locator, "a row is not an object"))
            continue
        try:
            found.append(outcome(row, source, locator, arm, threshold))
        except ValueError as e:
            skips.append(Skip(locator, str(e)))
    return found
