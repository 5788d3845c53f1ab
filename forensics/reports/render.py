"""Render an `IncidentContext` to one self-contained HTML file: CSS inline, charts as SVG.

Jinja2 autoescapes everything; the only markup passed through is the chart SVG,
which matplotlib writes with text as glyph paths (charts.py), so no agent-supplied
string reaches the page as markup.
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from ..resources import resource_dir
from .charts import chart_svg
from .incident import IncidentContext


def environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(str(resource_dir("reports"))),
        autoescape=select_autoescape(["html", "j2"], default_for_string=True, default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_incident(context: IncidentContext) -> str:
    """The report's HTML: charts drawn, then the template rendered with autoescaping on."""
    for chart in context.charts:
        chart.svg = chart_svg(chart)
    template = environment().get_template("incident.html.j2")
    return template.render(ctx=context, svg=lambda chart: Markup(chart.svg))  # noqa: S704


def write_incident(context: IncidentContext, out: Path) -> Path:
    out.write_text(render_incident(context), encoding="utf-8")
    return out
