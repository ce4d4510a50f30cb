"""One sentence per report figure saying what it shows, computed from the figure's own data
(Markdown, names escaped): the report puts it under the figure, after the question it answers."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from ..protocol.schema import Col
from .formatting import format_duration
from .report_page import markdown_escape
from .scores import ORACLE_KINDS, NormalizedSummary

__all__ = ["bounds_finding", "ecdf_finding", "normalized_finding", "regret_finding", "score_finding"]


def _name(row: Mapping) -> str:
    return f"{markdown_escape(row[Col.LABEL])}"


def _score(row: Mapping) -> str:
    half = row[Col.CI95]
    return f"{row[Col.MEAN]:.3g}" + ("" if half is None or not math.isfinite(half) else f" ± {half:.2g}")


def score_finding(cells: pl.DataFrame, time_column: str, per: str) -> str:
    """The best-scoring setting and its time, and the cheapest setting whose interval reaches the
    best score (what buying more time gets)."""
    competitors = cells.filter(~pl.col(Col.KIND).is_in(ORACLE_KINDS)).sort(Col.MEAN, descending=True)
    if competitors.height == 0:
        return "No agent besides the oracle."
    best = competitors.row(0, named=True)
    reach = competitors.filter((pl.col(Col.MEAN) + pl.col(Col.CI95).fill_nan(0.0)) >= best[Col.MEAN])
    cheapest = reach.sort(time_column).row(0, named=True)
    zero = competitors.filter(pl.col(time_column) == 0.0).height

    def at(row: Mapping) -> str:
        t = row[time_column]
        return "no offline computation" if t == 0.0 else f"{format_duration(t)}{per}"

    text = f"Best score: {_name(best)}, {_score(best)} at {at(best)}"
    if cheapest[Col.CELL_ID] != best[Col.CELL_ID]:
        text += f"; the cheapest setting within reach of it: {_name(cheapest)}, {_score(cheapest)} at {at(cheapest)}"
    if zero and time_column == Col.OFFLINE_TIME:
        text += f"; {zero} of {competitors.height} settings compute nothing offline (left panel)"
    return text + "."


def bounds_finding(bounds: pl.DataFrame, unit_note: str) -> str:
    """Who wins with the largest budgets and with the smallest budgets any agent fits, and how many
    cells are boundaries."""
    if bounds.height == 0:
        return "No budget cell."
    largest = bounds.sort(["online_bound_seconds_per_step", "offline_bound_seconds"], descending=True).row(
        0, named=True
    )
    fitting = bounds.filter(pl.col("algorithms").list.first() != "none").sort(
        ["online_bound_seconds_per_step", "offline_bound_seconds"]
    )
    text = f"With the largest budgets: {', '.join(markdown_escape(a) for a in largest['algorithms'])}"
    if fitting.height:
        small = fitting.row(0, named=True)
        text += (
            f"; with the smallest budgets any agent fits ({format_duration(small['online_bound_seconds_per_step'])} "
            f"per decision, offline {format_duration(small['offline_bound_seconds'])}): "
            f"{', '.join(markdown_escape(a) for a in small['algorithms'])}"
        )
    if "boundary" in bounds.columns:
        n = int(bounds["boundary"].fill_null(False).sum())
        text += f"; {n} of {bounds.height} cells are boundaries (hatched){unit_note}"
    return text + "."


def ecdf_finding(by_algorithm: Mapping[str, np.ndarray], groups: Sequence[Sequence[str]], oracle: str) -> str:
    """The highest and lowest median return, and which distributions coincide."""
    medians = {a: float(np.median(r)) for a, r in by_algorithm.items() if a != oracle and len(r)}
    if not medians:
        return "No agent besides the oracle."
    top = max(medians, key=medians.__getitem__)
    low = min(medians, key=medians.__getitem__)
    text = (
        f"Highest median return: {markdown_escape(top)} ({medians[top]:.3g}); "
        f"lowest: {markdown_escape(low)} ({medians[low]:.3g})"
    )
    same = [g for g in groups if len(g) > 1]
    if same:
        text += "; the same distribution (drawn once): " + "; ".join(
            " = ".join(markdown_escape(a) for a in g) for g in same
        )
    return text + "."


def regret_finding(final: Mapping[str, tuple[float, float]]) -> str:
    """The lowest and highest mean cumulative regret at the last step (``final``: label -> (mean,
    95% half-width))."""
    if not final:
        return "No curve."
    low = min(final, key=lambda k: final[k][0])
    high = max(final, key=lambda k: final[k][0])
    return (
        f"At the last step the lowest mean cumulative regret is {markdown_escape(low)}'s ({final[low][0]:.3g} ± "
        f"{final[low][1]:.2g}), the highest {markdown_escape(high)}'s ({final[high][0]:.3g})."
    )


def normalized_finding(summary: NormalizedSummary) -> str:
    """The leader by IQM, the runner-up, and the probability that the leader scores better."""
    frame = summary.aggregate
    if frame.height == 0:
        return "No normalised scores."
    lead = frame.row(0, named=True)
    text = (
        f"Highest IQM of normalised scores: {markdown_escape(lead[Col.ALGORITHM])}, {lead['iqm']:.2f} "
        f"[{lead['iqm_low']:.2f}, {lead['iqm_high']:.2f}]"
    )
    if frame.height > 1:
        second = frame.row(1, named=True)
        p = second.get("p_leader_better", math.nan)
        text += (
            f"; next {markdown_escape(second[Col.ALGORITHM])}, {second['iqm']:.2f} "
            f"[{second['iqm_low']:.2f}, {second['iqm_high']:.2f}]"
        )
        if p is not None and math.isfinite(p):
            text += f" (P(leader's score higher) = {p:.2f})"
    return text + f", over {len(summary.scores)} experiments."
