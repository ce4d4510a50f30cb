"""Analysis of results: statistics, cumulative regret, result tables, figures and the HTML report.

One job per module: :mod:`~bbrl.analysis.stats` (intervals, paired Z-tests, best agents under time
bounds, normalised scores), :mod:`~bbrl.analysis.regret` (cumulative regret against the oracle),
:mod:`~bbrl.analysis.formatting` (durations as text), :mod:`~bbrl.analysis.tables` (the Markdown
writer and every result table), :mod:`~bbrl.analysis.scores` (per-algorithm summaries of a grid's
results), :mod:`~bbrl.analysis.figures` (matplotlib figures), :mod:`~bbrl.analysis.report` (the
report folder and its HTML page), :mod:`~bbrl.analysis.export` (a grid's results for rliable,
AdaStop or as one long table: ``bbrl export``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import regret, stats
else:
    from ..lazy import attach as _attach

    # Imported on first use (bbrl.lazy), so that importing the package does not import polars.
    __getattr__, __dir__ = _attach(
        __name__,
        submodules=("regret", "stats"),
    )

__all__ = ["regret", "stats"]
