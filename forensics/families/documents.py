"""Which family a logged document belongs to, decided per document by its shape.

A user's mapping comes first (it says which documents it is for); then the built-ins:
LiteLLM payloads, Data Prepper span documents (both shapes), Data Prepper log
documents. A document none of them reads maps to nothing, and says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import LoggedRecord
from . import litellm
from .mapping import Mapping
from .otel import logs, spans


@dataclass
class Read:
    """One document's outcome: a record, not an agent record (a span of another
    service: counted, not stored), or nothing it maps to (a skip with the reason)."""

    record: LoggedRecord | None = None
    shape: str | None = None  # which reader took it
    problem: str | None = None  # why it maps to nothing


def read(document: Any, locator: str, mapping: Mapping | None = None) -> Read:
    if not isinstance(document, dict):
        return Read(problem=f"not a JSON object ({type(document).__name__})")
    try:
        if mapping is not None and mapping.matches(document):
            found = mapping.record(document, locator)
            if found is None:
                where = mapping.fields["time"]
                return Read(problem=f"mapping {mapping.name}: no time at {where!r}")
            return Read(found, f"mapping:{mapping.name}")
        if litellm.is_payload(document):
            return Read(litellm.record(document, locator), "litellm")
        if spans.is_span(document):
            return Read(spans.record(document, locator), "otel-span")
        if logs.is_log(document):
            return Read(logs.record(document, locator), "otel-log")
    except (ValueError, TypeError, OverflowError) as e:  # a field that holds something else
        return Read(problem=str(e) or type(e).__name__)
    except RecursionError:
        return Read(problem="nested too deeply to read")
    keys = ", ".join(sorted(document)[:6])
    return Read(
        problem="maps to nothing: not a Data Prepper span or log document nor a LiteLLM "
        f"payload (keys: {keys}); give --mapping"
        + (f" (mapping {mapping.name} does not match it)" if mapping else "")
    )
