"""The reports' charts, as SVG: the incident's window per call by role against
cumulative input, and the weekly review's cost per day by agent.

Both are written directly (svg.py): the incident's one per turn, every turn, each in
milliseconds (matplotlib took about 0.2 s a chart, so a long session's report charted
12 turns of 117), and the weekly review's one chart (matplotlib's import and figure
were a second of the review's time). The same chart is the same bytes, and text from
data is text, never markup.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .incident import CallPoint, Chart
from .svg import Svg, decimals, num, text_width, ticks
from .weekly import DayChart

ROLE_COLOURS = {  # colour-blind safe (Okabe-Ito)
    "user": "#0072B2",
    "model": "#009E73",
    "tool": "#E69F00",
    "summary": "#CC79A7",
    "inferred_system": "#BBBBBB",
}


WIDTH, HEIGHT = 900, 430
LEFT, RIGHT, BOTTOM = 78, 84, 62  # the plot's margins: the axes' labels
LEGEND_Y, LEGEND_ROW = 36, 16  # the legend's first baseline, under the title, and its rows
X_LABEL = "model call in the turn (▲ tool result arrived, ◆ after compaction, ✕ failed)"
BREAK_MARK = "✂"  # a call that broke its cached prefix (forensics cache)
X_LABEL_TURNS = "turn, its one model call (◆ after compaction, ✕ failed)"


def chart_svg(chart: Chart) -> str:
    """One turn: the estimated window per call stacked by role, the measured window as a
    black bar over it, cumulative input as lines on the right axis; the legend above
    the plot, never over it. Written directly (svg.py): a turn of hundreds of calls
    takes milliseconds and every call keeps its bar."""
    points = chart.points
    lines = not chart.turns  # a turn of one call: its cumulative input is its window
    doc = Svg(WIDTH, HEIGHT, chart.title)
    measured = [(i, p.measured) for i, p in enumerate(points) if p.measured is not None]
    cumulative_measured = [
        (i, p.cumulative_measured)
        for i, p in enumerate(points)
        if p.measured is not None and p.cumulative_measured is not None
    ]
    roles = [r for r in ROLE_COLOURS if any(p.by_role.get(r) for p in points)]
    rows = _legend(doc, roles, bool(measured), lines, lines and bool(cumulative_measured),
                   chart.turn)  # fmt: skip
    x0, x1, y0, y1 = LEFT, WIDTH - RIGHT, LEGEND_Y + LEGEND_ROW * rows + 12, HEIGHT - BOTTOM
    pitch = (x1 - x0) / max(len(points), 1)
    bar = pitch * (0.6 if pitch > 4 else 0.9)

    def x_of(i: int) -> float:  # the centre of call i (from 0)
        return x0 + pitch * (i + 0.5)

    totals = [sum(p.by_role.get(r) or 0 for r in ROLE_COLOURS) for p in points]
    left = ticks(max(totals + [m for _, m in measured] + [1]) * 1.05, 6, integer=True)
    highest = max([p.cumulative_estimated for p in points] + [c for _, c in cumulative_measured])
    right = ticks(max(highest, 1) * 1.05, 6, integer=True)

    def y_left(v: float) -> float:
        return y1 - (y1 - y0) * v / left[-1]

    def y_right(v: float) -> float:
        return y1 - (y1 - y0) * v / right[-1]

    doc.text(WIDTH / 2, 20, chart.title, size=14, anchor="middle")
    doc.add(
        f'<defs><pattern id="hatch-{chart.turn}" width="6" height="6" '
        'patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        f'<rect width="6" height="6" fill="{ROLE_COLOURS["inferred_system"]}"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#fff" stroke-width="2"/></pattern></defs>'
    )
    # the axes: grid and tick labels left (window) and right (cumulative input)
    for v in left:
        y = y_left(v)
        doc.line(x0, y, x1, y, "#e4e4e4")
        doc.text(x0 - 6, y + 4, f"{v:,.0f}", size=10.5, anchor="end")
    doc.line(x0, y1, x1, y1, "#333")
    doc.line(x0, y0, x0, y1, "#333")
    doc.text(16, (y0 + y1) / 2, "tokens in the window", size=11, anchor="middle", rotate=True)
    if lines:
        for v in right:
            doc.text(x1 + 6, y_right(v) + 4, f"{v:,.0f}", size=10.5, fill="#555")
        doc.line(x1, y0, x1, y1, "#999")
        doc.text(WIDTH - 10, (y0 + y1) / 2, "cumulative input in the turn (tokens)", size=11,
                 anchor="middle", rotate=True)  # fmt: skip
    # the bars, stacked by role
    for i, p in enumerate(points):
        base = 0
        for role, colour in ROLE_COLOURS.items():
            value = p.by_role.get(role) or 0
            if value <= 0:
                continue
            fill = f"url(#hatch-{chart.turn})" if role == "inferred_system" else colour
            top = y_left(base + value)
            doc.rect(x_of(i) - bar / 2, top, bar, y_left(base) - top, fill)
            base += value
        if p.kind == "failed":
            doc.text(x_of(i), y_left(base) - 6, "failed", size=10, anchor="middle",
                     fill="#D55E00", weight="bold")  # fmt: skip
        elif p.cache_break and len(points) <= 60:  # its cause above the bar, where it fits
            doc.text(x_of(i), y_left(base) - 6, f"{BREAK_MARK} {p.cache_break}", size=10,
                     anchor="middle", fill="#CC79A7", weight="bold")  # fmt: skip
    for i, m in measured:  # the measured window: a black bar across the call's
        doc.rect(x_of(i) - bar / 2 - 1, y_left(m) - 1.5, bar + 2, 3, "#000")
    if lines:
        _cumulative(doc, points, cumulative_measured, x_of, y_right)
    # the calls (or turns): as many labels as fit side by side
    labels = [_tick(p) for p in points]
    widest = max((text_width(t, 10.5) for t in labels), default=0) + 6
    step = max(1, math.ceil(widest / pitch))
    for i in range(0, len(points), step):
        doc.line(x_of(i), y1, x_of(i), y1 + 4, "#333")
        doc.text(x_of(i), y1 + 17, labels[i], size=10.5, anchor="middle")
    label = X_LABEL if lines else X_LABEL_TURNS
    if any(p.cache_break for p in points):  # said only where a call has one
        label = label.replace(", ✕ failed)", f", {BREAK_MARK} cache prefix broke, ✕ failed)")
    doc.text((x0 + x1) / 2, HEIGHT - 14, label, size=11, anchor="middle")
    return doc.done()


def _cumulative(doc: Svg, points: list[CallPoint], measured: list[tuple[int, int]],
                x_of: Callable[[int], float], y_of: Callable[[float], float]) -> None:  # fmt: skip
    """Cumulative input over the turn: dashed where estimated, solid where measured."""
    markers = len(points) <= 60
    estimated = [(x_of(i), y_of(p.cumulative_estimated)) for i, p in enumerate(points)]
    doc.polyline(estimated, "#555555", ' stroke-dasharray="5 3"')
    solid = [(x_of(i), y_of(c)) for i, c in measured]
    doc.polyline(solid, "#000")
    if markers:
        for x, y in estimated:
            doc.add(f'<circle cx="{num(x)}" cy="{num(y)}" r="2.5" fill="#555555"/>')
        for x, y in solid:
            doc.rect(x - 2.5, y - 2.5, 5, 5, "#000")


def _legend(doc: Svg, roles: list[str], measured: bool, cumulative: bool,
            cumulative_measured: bool, turn: int) -> int:  # fmt: skip
    """The legend above the plot (the roles the chart has): how many rows it took."""
    items: list[tuple[str, str]] = []  # (swatch markup at the origin, label)
    for role in roles:
        colour = ROLE_COLOURS[role]
        fill = f"url(#hatch-{turn})" if role == "inferred_system" else colour
        label = {"inferred_system": "system + tools (inferred)"}.get(role, f"{role} (estimated)")
        items.append((f'<rect x="0" y="-9" width="14" height="10" fill="{fill}"/>', label))
    if measured:
        items.append(('<rect x="0" y="-5.5" width="14" height="3" fill="#000"/>',
                      "window (measured)"))  # fmt: skip
    if cumulative:
        items.append(('<line x1="0" y1="-4" x2="14" y2="-4" stroke="#555555" '
                      'stroke-width="1.5" stroke-dasharray="5 3"/>',
                      "cumulative input (estimated)"))  # fmt: skip
    if cumulative_measured:
        items.append(('<line x1="0" y1="-4" x2="14" y2="-4" stroke="#000" stroke-width="1.5"/>',
                      "cumulative input (measured)"))  # fmt: skip
    x, row = float(LEFT), 0
    for swatch, label in items:
        width = 20 + text_width(label, 10.5) + 14
        if x + width > WIDTH - RIGHT and x > LEFT:
            x, row = LEFT, row + 1
        at_y = LEGEND_Y + LEGEND_ROW * row
        doc.add(f'<g transform="translate({num(x)} {num(at_y)})">{swatch}</g>')
        doc.text(x + 20, at_y, label, size=10.5)
        x += width
    return row + 1


def _tick(point: CallPoint) -> str:
    marks = (
        ("▲" if point.result_arrived else "")
        + ("◆" if point.after_compaction else "")
        + (BREAK_MARK if point.cache_break else "")
        + ("✕" if point.kind == "failed" else "")
    )
    return f"{point.label}{marks}"


DAY_WIDTH, DAY_HEIGHT = 1000, 320
DAY_LEFT, DAY_RIGHT, DAY_BOTTOM = 84, 20, 40
DAY_PALETTE = [*ROLE_COLOURS.values(), "#56B4E9", "#D55E00", "#F0E442", "#000000"]


def daily_cost_svg(chart: DayChart) -> str:
    """The week's cost per day, stacked by agent, in USD (the low bound); the legend
    above the plot. Written directly (svg.py), as the incident's charts are."""
    doc = Svg(DAY_WIDTH, DAY_HEIGHT, "cost per day, by agent (USD, low bound)")
    series = sorted(chart.series.items())
    x, row = float(DAY_LEFT), 0
    for index, (agent, _) in enumerate(series):  # the legend: a swatch and the agent
        width = 20 + text_width(agent, 10.5) + 14
        if x + width > DAY_WIDTH - DAY_RIGHT and x > DAY_LEFT:
            x, row = float(DAY_LEFT), row + 1
        at_y = LEGEND_Y - 14 + LEGEND_ROW * row
        doc.rect(x, at_y - 9, 14, 10, DAY_PALETTE[index % len(DAY_PALETTE)])
        doc.text(x + 20, at_y, agent, size=10.5)
        x += width
    rows = row + 1 if series else 0
    x0, x1 = DAY_LEFT, DAY_WIDTH - DAY_RIGHT
    y0, y1 = LEGEND_Y - 14 + LEGEND_ROW * rows + 4, DAY_HEIGHT - DAY_BOTTOM
    totals = [sum(values[i] for _, values in series) for i in range(len(chart.days))]
    left = ticks(max([*totals, 0.0]) * 1.05 or 1.0, 6)
    places = decimals(left[1] - left[0]) if len(left) > 1 else 2

    def y_of(v: float) -> float:
        return y1 - (y1 - y0) * v / left[-1]

    for v in left:  # the grid, and the ticks in as many decimals as their step needs
        doc.line(x0, y_of(v), x1, y_of(v), "#e4e4e4")
        doc.text(x0 - 6, y_of(v) + 4, f"${v:,.{places}f}", size=10.5, anchor="end")
    doc.line(x0, y1, x1, y1, "#333")
    doc.line(x0, y0, x0, y1, "#333")
    doc.text(16, (y0 + y1) / 2, "cost (USD, low bound)", size=11, anchor="middle", rotate=True)
    pitch = (x1 - x0) / max(len(chart.days), 1)
    for i, day in enumerate(chart.days):
        centre, base = x0 + pitch * (i + 0.5), 0.0
        for index, (_, values) in enumerate(series):
            if values[i] > 0:
                top = y_of(base + values[i])
                doc.rect(centre - pitch * 0.3, top, pitch * 0.6, y_of(base) - top,
                         DAY_PALETTE[index % len(DAY_PALETTE)])  # fmt: skip
                base += values[i]
        doc.line(centre, y1, centre, y1 + 4, "#333")
        doc.text(centre, y1 + 17, day, size=10.5, anchor="middle")
    return doc.done()
