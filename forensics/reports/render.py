"""Render an `IncidentContext` to one self-contained HTML file: CSS inline, charts as SVG.

Jinja2 autoescapes everything; the only markup passed through is the chart SVG,
whose text is escaped as it is written (svg.py), so no agent-supplied string reaches
the page as markup. Every
printed text is also made visible and bidi-isolated (`isolated`); in the tool's own
sentences a `command` in backticks is set as code once escaped (`prose`).
"""

from __future__ import annotations

import re
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from ..resources import resource_dir
from ..sanitize import visible
from .charts import chart_svg, daily_cost_svg
from .destination import write_page
from .incident import IncidentContext
from .weekly import WeeklyContext

_CODE = re.compile(r"`([^`\n]+)`")


def isolated(value: object) -> object:
    """Every text the template prints: escaped, its control and bidi characters shown
    (sanitize.visible), inside `<bdi>` so that its direction cannot turn the report's
    own sentence around. Markup (the charts, `plain`) and numbers pass as they are."""
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    return Markup("<bdi>%s</bdi>") % visible(value, keep_newlines=True)


def prose(value: object) -> Markup:
    """One of the tool's own sentences (evidence, notes, help): as `isolated`, and a
    `command` it names in backticks set as code. Never used on text from data alone
    (an id or a message keeps its backticks)."""
    escaped = str(escape(visible(str(value), keep_newlines=True)))  # no '<' left in it
    coded = _CODE.sub(r"<code>\1</code>", escaped)
    return Markup("<bdi>" + coded + "</bdi>")  # noqa: S704


def plain(value: object) -> Markup:
    """For an attribute value: escaped and made visible, without the `<bdi>` element."""
    return Markup("%s") % visible(str(value), keep_newlines=True)


def spanned(value: object) -> object:
    """A figure's text as `isolated` prints it, a range (low–high) able to wrap after its
    dash: in a number's cell, which never wraps, two ranges of six-digit figures in the
    turns' table widened the page past a 1,000-pixel window."""
    if isinstance(value, Markup) or not isinstance(value, str) or "–" not in value:
        return isolated(value)
    pieces = visible(value, keep_newlines=True).split("–")
    return Markup("<bdi>%s</bdi>") % Markup("–<wbr>").join(escape(p) for p in pieces)


WHOLE_CHARS = 32  # a code or name up to this long never wraps


def breakable(value: object) -> Markup:
    """A code or a name kept whole where it can be (not broken mid-word, as
    `overflow-wrap: anywhere` broke CONTEXT_LENGTH_EXCEEDED), yet, when longer than
    WHOLE_CHARS, able to wrap: a line may end after its `_`, `/`, `.` or `-`, or inside
    a run of 24 characters without one.
    The pieces are escaped one by one, so no break lands inside an entity."""
    text = visible(str(value), keep_newlines=True)
    if len(text) <= WHOLE_CHARS:  # a code of ordinary length stays on one line
        return Markup("<bdi>%s</bdi>") % text
    pieces = []
    for piece in re.split(r"(?<=[_/.-])", text):
        pieces += [piece[i : i + 24] for i in range(0, len(piece), 24)] or [""]
    return Markup("<bdi>%s</bdi>") % Markup("<wbr>").join(escape(p) for p in pieces)


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(resource_dir("reports"))),
        autoescape=select_autoescape(["html", "j2"], default_for_string=True, default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=isolated,
    )
    env.filters["plain"] = plain
    env.filters["prose"] = prose
    env.filters["breakable"] = breakable
    env.filters["spanned"] = spanned
    return env


def render_incident(context: IncidentContext) -> str:
    """The report's HTML: charts drawn, then the template rendered with autoescaping on."""
    for chart in context.charts:
        chart.svg = chart_svg(chart)
    template = environment().get_template("incident.html.j2")
    return template.render(ctx=context, svg=lambda chart: Markup(chart.svg))  # noqa: S704


def write_incident(context: IncidentContext, out: Path | None) -> Path | None:
    return write_page(render_incident(context), out)


def render_weekly(context: WeeklyContext) -> str:
    """The weekly review's HTML: its chart drawn, the template rendered, autoescaped."""
    context.by_day.svg = daily_cost_svg(context.by_day)
    template = environment().get_template("weekly.html.j2")
    return template.render(ctx=context, svg=lambda chart: Markup(chart.svg))  # noqa: S704


def write_weekly(context: WeeklyContext, out: Path | None) -> Path | None:
    return write_page(render_weekly(context), out)
