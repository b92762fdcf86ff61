"""Inline SVG charts: no script, no library, readable with the stylesheet alone.

Each chart is an ``<svg role="img">`` with a title and a description naming what it plots;
the page beside it holds the same figures as a table, which is what a screen reader reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from maitred.console.html import attr, esc

#: series colours by class name (the stylesheet sets them; these are their legend names)
_W, _H, _PAD = 640, 220, 36


def lines(
    title: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, str, Sequence[int]]],
) -> str:
    """A line chart: ``series`` are ``(name, css class, values)`` over the ``labels`` slices."""
    n = max((len(v) for _, _, v in series), default=0)
    top = max((max(v, default=0) for _, _, v in series), default=0) or 1
    width, height = _W - 2 * _PAD, _H - 2 * _PAD

    def x(i: int) -> float:
        return _PAD + (width * i / (n - 1) if n > 1 else width / 2)

    def y(v: int) -> float:
        return _PAD + height - height * v / top

    paths = []
    for name, cls, values in series:
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
        paths.append(
            f'<polyline class="line {attr(cls)}" points="{points}"><title>{esc(name)}</title>'
            "</polyline>"
        )
    axis = (
        f'<line class="axis" x1="{_PAD}" y1="{_PAD + height}" x2="{_PAD + width}" '
        f'y2="{_PAD + height}"/>'
        f'<text class="tick" x="{_PAD - 4}" y="{_PAD + 4}" text-anchor="end">{top:,}</text>'
        f'<text class="tick" x="{_PAD - 4}" y="{_PAD + height}" text-anchor="end">0</text>'
    )
    if labels:
        axis += (
            f'<text class="tick" x="{_PAD}" y="{_H - 8}">{esc(labels[0])}</text>'
            f'<text class="tick" x="{_PAD + width}" y="{_H - 8}" text-anchor="end">'
            f"{esc(labels[-1])}</text>"
        )
    legend = "".join(
        f'<li><span class="swatch {attr(cls)}" aria-hidden="true"></span>{esc(name)}</li>'
        for name, cls, _ in series
    )
    names = ", ".join(name for name, _, _ in series)
    return (
        f'<figure class="chart"><svg viewBox="0 0 {_W} {_H}" role="img" '
        f'aria-label="{attr(title)}: {attr(names)} per slice of time">'
        f"<title>{esc(title)}</title>{axis}{''.join(paths)}</svg>"
        f'<figcaption>{esc(title)}<ul class="legend">{legend}</ul></figcaption></figure>'
    )


def bars(title: str, rows: Sequence[tuple[str, int]], cls: str = "refused") -> str:
    """A horizontal bar chart of ``(label, count)`` rows, largest first as given."""
    if not rows:
        return ""
    top = max(n for _, n in rows) or 1
    row_h, label_w = 26, 200
    height = row_h * len(rows) + 8
    width = _W - label_w - 60
    out = []
    for i, (label, n) in enumerate(rows):
        y = 4 + i * row_h
        w = max(1.0, width * n / top)
        out.append(
            f'<text class="tick" x="{label_w - 6}" y="{y + 17}" text-anchor="end">'
            f"{esc(label)}</text>"
            f'<rect class="bar {attr(cls)}" x="{label_w}" y="{y + 4}" width="{w:.1f}" '
            f'height="{row_h - 8}"><title>{esc(label)}: {n:,}</title></rect>'
            f'<text class="tick" x="{label_w + w + 6:.1f}" y="{y + 17}">{n:,}</text>'
        )
    return (
        f'<figure class="chart"><svg viewBox="0 0 {_W} {height}" role="img" '
        f'aria-label="{attr(title)}"><title>{esc(title)}</title>{"".join(out)}</svg>'
        f"<figcaption>{esc(title)}</figcaption></figure>"
    )
