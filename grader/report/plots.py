"""Figures of the class report, rendered by matplotlib's Agg canvas to PNG data: URIs with reproducible bytes."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from typing import Sequence

import matplotlib
import matplotlib.style
import matplotlib.ticker
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

DPI = 100
WIDTH = 7.5                  # inches: 750 px, the width of the report's main column
COLOURS = {"zero": "#c0392b", "partial": "#e0a526", "full": "#2e8b57", "bars": "#3b6ea5"}


@dataclass(frozen=True)
class ExerciseShares:
    """How many submissions scored zero, some or all of an exercise's points, and their mean share."""

    label: str
    zero: int
    partial: int
    full: int
    mean_share: float        # mean score / max score, in [0, 1]


def _png_uri(figure: Figure) -> str:
    """PNG bytes that depend on the figure only: no Software/date chunks, a fixed DPI, Agg (no display)."""
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _style():
    """matplotlib's own defaults, whatever a user's matplotlibrc says, so every machine draws the same figure."""
    return matplotlib.style.context("default")


def total_histogram(totals: Sequence[float], max_total: float) -> str:
    """Histogram of submission totals over [0, max_total]; bins one point wide up to 30 points, else 20 bins."""
    top = max(max_total, max(totals, default=0.0), 1.0)
    bins = int(top) if top == int(top) and top <= 30 else 20
    with _style():
        figure = Figure(figsize=(WIDTH, 3.0), dpi=DPI, layout="constrained")
        axes = figure.add_subplot()
        axes.hist(list(totals), bins=bins, range=(0.0, top), color=COLOURS["bars"], edgecolor="white")
        axes.set_xlim(0.0, top)
        axes.set_xlabel(f"total score (of {top:g})")
        axes.set_ylabel("submissions")
        # The default (auto) locator's ticks, on whole submissions only.
        ticks = matplotlib.ticker.MaxNLocator(nbins="auto", steps=[1, 2, 2.5, 5, 10], integer=True)
        axes.yaxis.set_major_locator(ticks)
        axes.spines[["top", "right"]].set_visible(False)
        return _png_uri(figure)


def exercise_shares(rows: Sequence[ExerciseShares]) -> str:
    """One horizontal bar per exercise: the shares of submissions with zero, partial and full marks.

    One figure instead of small multiples: thirteen exercises stay readable on one screen, and the
    mean score share printed at the end of each bar says what the colours alone cannot.
    """
    height = 1.2 + 0.32 * max(len(rows), 1)
    with _style():
        figure = Figure(figsize=(WIDTH, height), dpi=DPI, layout="constrained")
        axes = figure.add_subplot()
        labels = [row.label for row in rows][::-1]           # first exercise on top
        ordered = list(rows)[::-1]
        left = [0.0] * len(ordered)
        for kind in ("zero", "partial", "full"):
            shares = []
            for row in ordered:
                count = row.zero + row.partial + row.full
                shares.append(getattr(row, kind) / count if count else 0.0)
            axes.barh(labels, shares, left=left, color=COLOURS[kind], label=f"{kind} marks", height=0.7)
            left = [a + b for a, b in zip(left, shares, strict=True)]
        for y, row in enumerate(ordered):
            axes.text(1.01, y, f"mean {row.mean_share:.0%}", va="center", fontsize=8)
        axes.set_xlim(0.0, 1.0)
        axes.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
        axes.set_xlabel("share of submissions")
        axes.tick_params(axis="y", labelsize=8)
        axes.spines[["top", "right"]].set_visible(False)
        axes.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=3, frameon=False, fontsize=8)
        return _png_uri(figure)
