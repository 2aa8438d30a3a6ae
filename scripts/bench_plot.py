#!/usr/bin/env python3
"""Draws the tables of a `bench --json` file as one SVG document, a horizontal bar chart per table.

Usage: scripts/bench_plot.py RESULTS.json OUT.svg

One bar per row, its length the row's median (scaled to the chart's largest figure), a thin line from min to max
across it, the median in the table's unit, and the row's ratios as text: to the table's raw ring row and to its
tokio row (the `vs raw` and `vs tokio` of `bench --markdown`), or to the baseline row when that is neither. Text is
escaped for XML; a missing (null) figure draws an empty bar. Python 3 standard library only.
"""

import json
import math
import sys
from xml.sax.saxutils import escape

WIDTH, LABEL_RIGHT, BAR_LEFT, BAR_MAX, RATIO_LEFT = 1200, 290, 300, 420, 880
ROW_H, TITLE_H, GAP = 22, 26, 18


def finite(v):
    return isinstance(v, (int, float)) and math.isfinite(v)


def in_family(name, family):
    """`raw ring`, `tokio current-thread` belong to `raw`, `tokio`; `tokio-uring` does not."""
    return name == family or name.startswith(family + " ")


def fmt(metric, v):
    """A median as `bench` prints it in the table of that metric."""
    if not finite(v):
        return "-"
    if metric.endswith("/s") or metric == "IOPS":
        for scale, suffix, digits in ((1e9, "G", 2), (1e6, "M", 2), (1e3, "k", 1)):
            if v >= scale:
                return f"{v / scale:.{digits}f}{suffix} {metric}"
        return f"{v:.1f} {metric}"
    if metric.endswith("%") or "% of" in metric:
        return f"{v:.4f}%"
    if metric == "bytes/conn":
        return f"{v:.0f} {metric}"
    return f"{v:.1f} {metric}"


def ratio_text(table, row):
    rows = table["rows"]
    base = next((r for r in rows if r.get("ratio") == 1.0), None)
    parts = []
    if base and finite(row.get("ratio")) and base["name"] != row["name"]:
        if not (in_family(base["name"], "raw") or in_family(base["name"], "tokio")):
            parts.append(f"{row['ratio']:.2f}x vs {base['name']}")
    for family in ("raw", "tokio"):
        other = next((r for r in rows if in_family(r["name"], family)), None)
        if other is None or other["name"] == row["name"]:
            continue
        if finite(row.get("ratio")) and finite(other.get("ratio")) and other["ratio"] != 0:
            parts.append(f"{row['ratio'] / other['ratio']:.2f}x vs {family}")
    if not parts and base is not None and base["name"] == row["name"]:
        parts.append("baseline")
    return ", ".join(parts)


def chart(out, table, top):
    metric = table.get("metric", "")
    shorter = ", shorter is better" if metric.startswith(("ns/", "us/")) else ""
    out.append('<g class="chart">')
    out.append(f'<text x="10" y="{top + 16:.1f}" font-size="14" font-weight="bold">'
               f'{escape(table["title"])} ({escape(metric)}{shorter})</text>')
    figures = [v for r in table["rows"] for v in (r.get("median"), r.get("max")) if finite(v) and v > 0]
    scale = max(figures, default=0.0)

    def length(v):
        return min(v / scale * BAR_MAX, BAR_MAX) if scale > 0 and finite(v) and v > 0 else 0.0

    for i, row in enumerate(table["rows"]):
        y = top + TITLE_H + ROW_H * i
        mid = y + ROW_H / 2
        w, lo, hi = length(row.get("median")), length(row.get("min")), length(row.get("max"))
        value = fmt(metric, row.get("median"))
        name = escape(row["name"])
        out.append(f'<text x="{LABEL_RIGHT}" y="{mid + 4:.1f}" text-anchor="end">{name}</text>')
        out.append(f'<rect class="bar" x="{BAR_LEFT}" y="{y + 3:.1f}" width="{w:.1f}" height="{ROW_H - 6:.1f}" '
                   f'fill="#4878a8"><title>{name}: {escape(value)} (min {escape(fmt(metric, row.get("min")))}, '
                   f'max {escape(fmt(metric, row.get("max")))})</title></rect>')
        if lo > 0 and hi > lo:
            out.append(f'<line x1="{BAR_LEFT + lo:.1f}" y1="{mid:.1f}" x2="{BAR_LEFT + hi:.1f}" y2="{mid:.1f}" '
                       'stroke="#1a1a1a" stroke-width="1"/>')
        out.append(f'<text x="{BAR_LEFT + max(w, hi) + 6:.1f}" y="{mid + 4:.1f}">{escape(value)}</text>')
        ratio = ratio_text(table, row)
        if ratio:
            out.append(f'<text x="{RATIO_LEFT}" y="{mid + 4:.1f}" fill="#444444">{escape(ratio)}</text>')
    out.append("</g>")


def render(doc):
    tables = doc.get("benchmarks", [])
    height = sum(TITLE_H + ROW_H * len(t["rows"]) + GAP for t in tables) + GAP
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
           f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>']
    top = GAP
    for table in tables:
        chart(out, table, top)
        top += TITLE_H + ROW_H * len(table["rows"]) + GAP
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: bench_plot.py RESULTS.json OUT.svg")
    with open(argv[1]) as f:
        doc = json.load(f)
    with open(argv[2], "w") as f:
        f.write(render(doc))


if __name__ == "__main__":
    main(sys.argv)
