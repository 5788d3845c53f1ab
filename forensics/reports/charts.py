"""The reports' charts, as SVG: the incident's window per call by role against
cumulative input, and the weekly review's cost per day by agent.

matplotlib writes text as glyph paths (`svg.fonttype = "path"`), never as markup, and
with a fixed hash salt and no date, so the same chart is the same bytes.
"""

from __future__ import annotations

import io

from .incident import CallPoint, Chart
from .weekly import DayChart

ROLE_COLOURS = {  # colour-blind safe (Okabe-Ito)
    "user": "#0072B2",
    "model": "#009E73",
    "tool": "#E69F00",
    "summary": "#CC79A7",
    "inferred_system": "#BBBBBB",
}


MAX_TICKS = 40


def chart_svg(chart: Chart) -> str:
    """Stacked estimated window per call, measured size as markers, cumulative input as lines."""
    import matplotlib

    matplotlib.use("Agg")
    # text as glyph paths, never markup; a fixed hash salt: the same chart, the same bytes
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "agent-forensics"}):
        return _draw(chart)


def _draw(chart: Chart) -> str:
    from matplotlib import pyplot as plt
    from matplotlib.ticker import FuncFormatter

    points = chart.points
    xs = list(range(1, len(points) + 1))
    fig, ax = plt.subplots(figsize=(9, 4.2), dpi=100)
    bottom = [0] * len(points)
    for role, colour in ROLE_COLOURS.items():
        values = [p.by_role.get(role) or 0 for p in points]
        label = {"inferred_system": "system + tools (inferred)"}.get(role, f"{role} (estimated)")
        ax.bar(
            xs,
            values,
            bottom=bottom,
            color=colour,
            width=0.6,
            label=label,
            hatch="//" if role == "inferred_system" else None,
            edgecolor="white",
        )
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    measured = [(x, p.measured) for x, p in zip(xs, points, strict=True) if p.measured is not None]
    if measured:
        ax.scatter(
            [x for x, _ in measured],
            [m for _, m in measured],
            marker="D",
            s=36,
            color="black",
            zorder=5,
            label="window (measured)",
        )
    thousands = FuncFormatter(lambda v, _: f"{v:,.0f}")
    ax.yaxis.set_major_formatter(thousands)
    ax.set_ylabel("tokens in the window")
    ax.set_xlabel("model call in the turn (▲ tool result arrived, ◆ after compaction, ✕ failed)")
    # at most MAX_TICKS labels: each is drawn as glyph paths, and a turn of hundreds of
    # calls spent most of a report's time (measured: 50 s) laying out unreadable ticks
    step = -(-len(xs) // MAX_TICKS)
    ax.set_xticks(xs[::step])
    ax.set_xticklabels([_tick(p) for p in points[::step]])
    top = max(bottom + [m for _, m in measured] + [1])
    for x, p in zip(xs, points, strict=True):
        if p.kind == "failed":
            ax.annotate(
                "failed",
                (x, bottom[x - 1]),
                textcoords="offset points",
                xytext=(0, 6),
                ha="center",
                color="#D55E00",
                fontsize=9,
                fontweight="bold",
            )
    ax.set_ylim(0, top * 1.18)
    twin = ax.twinx()
    twin.plot(
        xs,
        [p.cumulative_estimated for p in points],
        linestyle="--",
        color="#555555",
        marker="o",
        markersize=3,
        label="cumulative input (estimated)",
    )
    cumulative = [
        (x, p.cumulative_measured)
        for x, p in zip(xs, points, strict=True)
        if p.measured is not None and p.cumulative_measured is not None
    ]
    if cumulative:
        twin.plot(
            [x for x, _ in cumulative],
            [c for _, c in cumulative],
            linestyle="-",
            color="black",
            marker="s",
            markersize=3,
            label="cumulative input (measured)",
        )
    twin.yaxis.set_major_formatter(thousands)
    twin.set_ylabel("cumulative input in the turn (tokens)")
    twin.set_ylim(
        0, max([p.cumulative_estimated for p in points] + [c for _, c in cumulative] + [1]) * 1.18
    )
    handles, labels = ax.get_legend_handles_labels()
    more, more_labels = twin.get_legend_handles_labels()
    ax.legend(
        handles + more, labels + more_labels, fontsize=7.5, loc="upper left", ncol=2, frameon=False
    )
    ax.set_title(chart.title, fontsize=11)
    for side in ("top",):
        ax.spines[side].set_visible(False)
        twin.spines[side].set_visible(False)
    fig.tight_layout()
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]  # drop the XML prolog and doctype: inline in HTML
    start, end = svg.find("<metadata>"), svg.find("</metadata>")
    if start != -1 and end != -1:  # RDF boilerplate, namespaces of outside vocabularies
        svg = svg[:start] + svg[end + len("</metadata>") :]
    return svg


def _tick(point: CallPoint) -> str:
    marks = (
        ("▲" if point.result_arrived else "")
        + ("◆" if point.after_compaction else "")
        + ("✕" if point.kind == "failed" else "")
    )
    return f"{point.label}{marks}"


def daily_cost_svg(chart: DayChart) -> str:
    """The week's cost per day, stacked by agent, in USD (the low bound)."""
    import matplotlib

    matplotlib.use("Agg")
    # agent names are data: never read as mathtext ($...$), never hidden by a leading _
    with matplotlib.rc_context(
        {"svg.fonttype": "path", "svg.hashsalt": "agent-forensics", "text.parse_math": False}
    ):
        from matplotlib import pyplot as plt
        from matplotlib.ticker import FuncFormatter

        fig, ax = plt.subplots(figsize=(10, 3.2), dpi=100)
        try:
            bottom = [0.0] * len(chart.days)
            palette = list(ROLE_COLOURS.values()) + ["#56B4E9", "#D55E00", "#F0E442", "#000000"]
            for index, (agent, values) in enumerate(sorted(chart.series.items())):
                ax.bar(chart.days, values, bottom=bottom, label=f" {agent}" if agent.startswith(
                       "_") else agent, color=palette[index % len(palette)])  # fmt: skip
                bottom = [b + v for b, v in zip(bottom, values, strict=True)]
            ax.set_ylabel("cost (USD, low bound)")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"${v:,.2f}"))
            ax.spines[["top", "right"]].set_visible(False)
            if chart.series:
                ax.legend(frameon=False, fontsize=8, ncols=min(4, len(chart.series)),
                          loc="lower left", bbox_to_anchor=(0, 1.0))  # above the bars
            fig.tight_layout()
            out = io.StringIO()
            fig.savefig(out, format="svg", metadata={"Date": None})
            return out.getvalue()
        finally:
            plt.close(fig)
