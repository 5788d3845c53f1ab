"""SVG written directly: the few shapes the reports' charts need, and axes whose ticks
are round numbers that read apart.

Every text goes out as a `<text>` element's content, XML-escaped and made visible
(sanitize.visible), so nothing from data is markup. Coordinates are written with at
most one decimal: the same chart is the same bytes.
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape, quoteattr

from ..sanitize import visible

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
CHAR_PX = 0.6  # a character's advance as a share of the font size (DejaVu Sans: about 0.55-0.63)


def num(value: float) -> str:
    """A coordinate: at most one decimal, no trailing zero, never '-0'."""
    text = f"{value:.1f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def text_width(text: str, size: float) -> float:
    """About how wide `text` is drawn at `size` px (for layout, not for measuring)."""
    return len(text) * size * CHAR_PX


def nice_step(span: float, most: int, integer: bool = False) -> float:
    """The round step (1, 2, 2.5 or 5 times a power of ten) that cuts [0, span] into at
    most `most` intervals; at least 1 when the values are whole numbers."""
    if span <= 0:
        return 1.0
    raw = span / max(most, 1)
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        step = factor * power
        if step >= raw:
            break
    if integer:
        step = max(1.0, float(math.ceil(step)))
    return step


def ticks(top: float, most: int = 6, integer: bool = False) -> list[float]:
    """Round values from 0 to at least `top` (and 1 step when `top` is 0)."""
    step = nice_step(top, most, integer)
    count = max(1, math.ceil(top / step - 1e-9))
    return [round(i * step, 12) for i in range(count + 1)]


def decimals(step: float) -> int:
    """The fewest decimals that write every multiple of `step` exactly (0.25: 2)."""
    for places in range(7):
        if abs(step * 10**places - round(step * 10**places)) < 1e-6:
            return places
    return 6


class Svg:
    """An SVG document built element by element."""

    def __init__(self, width: int, height: int, label: str):
        self.width, self.height = width, height
        self.parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" aria-label={quoteattr(visible(label))} '
            f'font-family="{FONT}">',
            f"<title>{escape(visible(label))}</title>",
        ]

    def add(self, markup: str) -> None:
        self.parts.append(markup)

    def text(
        self,
        x: float,
        y: float,
        content: str,
        *,
        size: float = 11,
        anchor: str = "start",
        fill: str = "#222",
        weight: str | None = None,
        rotate: bool = False,
    ) -> None:
        """A line of text at (x, y) (its baseline), escaped."""
        attrs = f'x="{num(x)}" y="{num(y)}" font-size="{num(size)}" fill="{fill}"'
        if anchor != "start":
            attrs += f' text-anchor="{anchor}"'
        if weight:
            attrs += f' font-weight="{weight}"'
        if rotate:
            attrs += f' transform="rotate(-90 {num(x)} {num(y)})"'
        self.parts.append(f"<text {attrs}>{escape(visible(content))}</text>")

    def rect(self, x: float, y: float, w: float, h: float, fill: str, extra: str = "") -> None:
        self.parts.append(
            f'<rect x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}" '
            f'fill="{fill}"{extra}/>'
        )

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str,
             width: float = 1, extra: str = "") -> None:  # fmt: skip
        self.parts.append(
            f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" '
            f'stroke="{stroke}" stroke-width="{num(width)}"{extra}/>'
        )

    def polyline(self, points: list[tuple[float, float]], stroke: str, extra: str = "") -> None:
        if not points:
            return
        path = " ".join(f"{num(x)},{num(y)}" for x, y in points)
        self.parts.append(
            f'<polyline points="{path}" fill="none" stroke="{stroke}" stroke-width="1.5"{extra}/>'
        )

    def done(self) -> str:
        return "".join([*self.parts, "</svg>"])
