"""The report's figures (matplotlib): score against offline and online time with each algorithm's
Pareto front, the map of the best algorithms under time bounds, the ECDF of returns and the
normalised scores; stable colours and markers per algorithm."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import polars as pl

from .. import agents
from ..fileio import write_atomic
from ..protocol.schema import Col
from .scores import ORACLE_KINDS, NormalizedSummary
from .stats import BOUND_FACTOR

__all__ = [
    "ALGORITHM_ORDER",
    "TIME_FLOOR_SECONDS",
    "algorithm_colour",
    "algorithm_marker",
    "bounds_figure",
    "ecdf_figure",
    "normalized_figure",
    "pareto_front",
    "save_figure",
    "score_figure",
]

#: Stable colours: an algorithm has the same colour in every figure and report, by its place in the
#: registry of agent kinds (:func:`bbrl.agents.kinds`).
ALGORITHM_ORDER = tuple(cls.display for cls in agents.kinds().values())

_MARKERS = "os^vD<>phX*P"

#: Times below this are drawn at it on the log axes (a log axis cannot show 0).
TIME_FLOOR_SECONDS = 1e-7


def _place(algorithm: str, others: list[str]) -> int:
    """The algorithm's place: in the registry's order, then among the ``others`` (Python agents)."""
    if algorithm in ALGORITHM_ORDER:
        return ALGORITHM_ORDER.index(algorithm)
    return len(ALGORITHM_ORDER) + others.index(algorithm)


def algorithm_colour(algorithm: str, others: list[str]) -> tuple[float, ...]:
    import matplotlib

    cmap = matplotlib.colormaps["tab20"]
    index = _place(algorithm, others)
    return cmap((2 * index) % 20 + (index // 10) % 2)


def algorithm_marker(algorithm: str, others: list[str]) -> str:
    index = _place(algorithm, others)
    return _MARKERS[index % len(_MARKERS)]


def save_figure(fig: object, base: Path) -> dict[str, Path]:
    import matplotlib.pyplot as plt

    paths = {}
    for fmt in ("png", "svg"):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=fmt, dpi=120, bbox_inches="tight")  # type: ignore[attr-defined]
        paths[fmt] = write_atomic(base.with_suffix(f".{fmt}"), buffer.getvalue())
    plt.close(fig)  # type: ignore[arg-type]
    return paths


def pareto_front(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both axes (less time, higher score), by
    increasing x: each algorithm's best trade-offs, the only points a line between means anything."""
    order = np.lexsort((-y, x))
    front: list[int] = []
    best = -math.inf
    for i in order:
        if y[i] > best:
            front.append(int(i))
            best = y[i]
    return np.asarray(front, dtype=np.int64)


def score_figure(
    cells: pl.DataFrame,
    x_column: str,
    x_halfwidth: str | None,
    scale: float,
    xlabel: str,
    title: str,
    others: list[str],
):
    """Mean score against a time, one marker per setting with its 95% interval (vertical: the
    score; horizontal: the mean time, where measured per trajectory), and each algorithm's Pareto
    front as its line. Times of zero are drawn at :data:`TIME_FLOOR_SECONDS` (a log axis)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    for row in cells.filter(pl.col(Col.KIND).is_in(ORACLE_KINDS)).iter_rows(named=True):
        # The oracle sees the true MDP: a reference level, not a point of the trade-off.
        ax.axhline(row[Col.MEAN], color="0.35", linestyle="--", linewidth=1.0, label=f"{row[Col.ALGORITHM]}, reference")
    competitors = cells.filter(~pl.col(Col.KIND).is_in(ORACLE_KINDS))
    for algorithm in dict.fromkeys(competitors[Col.ALGORITHM].to_list()):
        sub = competitors.filter(pl.col(Col.ALGORITHM) == algorithm)
        x = np.maximum(sub[x_column].to_numpy().astype(np.float64) * scale, TIME_FLOOR_SECONDS * scale)
        y = sub[Col.MEAN].to_numpy()
        yerr = sub[Col.CI95].to_numpy()
        xerr = None
        if x_halfwidth is not None and x_halfwidth in sub.columns:
            h = np.nan_to_num(sub[x_halfwidth].to_numpy().astype(np.float64)) * scale
            xerr = np.vstack([np.minimum(h, x - x * 0.5), h])  # never below the axis floor
        colour, marker = algorithm_colour(algorithm, others), algorithm_marker(algorithm, others)
        ax.errorbar(
            x, y, yerr=yerr, xerr=xerr, fmt=marker, markersize=5, color=colour, elinewidth=0.8, capsize=2,
            label=algorithm,
        )  # fmt: skip
        front = pareto_front(x, y)
        if front.size > 1:
            ax.plot(x[front], y[front], linestyle="-", linewidth=0.9, color=colour)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("mean discounted return (95% interval)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    # Outside the axes, so that the legend never hides a point.
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="algorithm", title_fontsize=8)
    return fig


def _edges(bounds: list[float], factor: float) -> list[tuple[float, float]]:
    """The range of budgets each bound stands for: from the bound up to the next one (the last up
    to one factor more). A budget in that range admits at least the agents within the bound."""
    return [(b, bounds[k + 1] if k + 1 < len(bounds) else b * factor) for k, b in enumerate(bounds)]


def bounds_figure(bounds: pl.DataFrame, title: str, others: list[str], note: str = ""):
    """The best algorithms for each pair of budgets, each cell drawn over the range of budgets it
    stands for (edges at the bounds). A bound of 0 offline (agents that learn nothing offline only)
    is drawn as the band below the first positive bound."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    fig, ax = plt.subplots(figsize=(8.5, 5.2))
    xs = sorted(set(bounds["online_bound_seconds_per_step"].to_list()))
    ys = sorted(set(bounds["offline_bound_seconds"].to_list()))
    positive = [y for y in ys if y > 0.0]
    zero_band = (positive[0] / BOUND_FACTOR if positive else 1e-3, positive[0] if positive else 1e-2)
    x_range = dict(zip(xs, _edges(xs, BOUND_FACTOR), strict=True))
    y_range = dict(zip(positive, _edges(positive, BOUND_FACTOR), strict=True))
    y_range[0.0] = zero_band
    seen: dict[str, tuple[float, ...]] = {}
    for row in bounds.iter_rows(named=True):
        x0, x1 = (v * 1e3 for v in x_range[row["online_bound_seconds_per_step"]])
        y0, y1 = y_range[row["offline_bound_seconds"]]
        chosen = row["algorithms"]
        # Several algorithms not significantly different share the cell in horizontal stripes.
        edges = np.exp(np.linspace(math.log(y0), math.log(y1), len(chosen) + 1))
        for k, algorithm in enumerate(chosen):
            colour = (0.85, 0.85, 0.85, 1.0) if algorithm == "none" else algorithm_colour(algorithm, others)
            seen.setdefault(algorithm, colour)
            ax.add_patch(
                Rectangle((x0, edges[k]), x1 - x0, edges[k + 1] - edges[k], facecolor=colour, edgecolor="white", lw=0.4)
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_range[xs[0]][0] * 1e3, x_range[xs[-1]][1] * 1e3)
    low = zero_band[0] if 0.0 in ys else y_range[positive[0]][0]
    ax.set_ylim(low, y_range[positive[-1]][1] if positive else zero_band[1])
    if 0.0 in ys:
        ax.axhline(zero_band[1], color="black", linewidth=0.8)
        ax.text(
            ax.get_xlim()[0], math.sqrt(zero_band[0] * zero_band[1]), " offline 0", va="center", ha="left", fontsize=7
        )
    ax.set_xlabel("online time budget (ms per decision, log scale; a cell spans the budgets from its left edge)")
    ax.set_ylabel("offline time budget (s, log scale)")
    ax.set_title(title + (f"\n{note}" if note else ""), fontsize=10)
    handles = [Patch(facecolor=c, label=("no agent within the bounds" if a == "none" else a)) for a, c in seen.items()]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="best algorithm(s)")
    return fig


def normalized_figure(summary: NormalizedSummary, others: list[str]):
    """IQM and mean normalised score of each algorithm over every experiment, with 95%
    stratified-bootstrap intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = summary.aggregate
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 0.45 * max(3, frame.height) + 1.2), sharey=True)
    names = frame[Col.ALGORITHM].to_list()
    ys = np.arange(len(names))[::-1]
    for ax, what in zip(axes, ("iqm", "mean"), strict=True):
        for y, row in zip(ys, frame.iter_rows(named=True), strict=True):
            colour = algorithm_colour(row[Col.ALGORITHM], others)
            ax.plot([row[f"{what}_low"], row[f"{what}_high"]], [y, y], color=colour, linewidth=6, alpha=0.6)
            ax.plot([row[what]], [y], marker="|", color="black", markersize=12)
        ax.axvline(0.0, color="0.5", linewidth=0.8, linestyle=":")
        ax.axvline(1.0, color="0.5", linewidth=0.8, linestyle=":")
        ax.set_xlabel(f"{'IQM' if what == 'iqm' else 'mean'} of normalised scores")
        ax.grid(True, axis="x", alpha=0.3)
    axes[0].set_yticks(ys)
    axes[0].set_yticklabels(names)
    fig.suptitle(
        f"Normalised scores over {len(summary.scores)} experiments (0: Random, 1: Optimal), "
        "95% stratified-bootstrap intervals",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def ecdf_figure(by_algorithm: dict[str, np.ndarray], title: str, others: list[str]):
    """The distribution over the test MDPs of each algorithm's best setting's return (ECDF)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    for algorithm, returns in by_algorithm.items():
        x = np.sort(returns)
        y = np.arange(1, x.size + 1) / x.size
        style = "--" if algorithm == agents.Optimal.display else "-"
        ax.step(x, y, where="post", linestyle=style, color=algorithm_colour(algorithm, others), label=algorithm)
    ax.set_xlabel("discounted return of one test MDP")
    ax.set_ylabel("fraction of test MDPs with at most this return")
    ax.set_title(title + "\neach algorithm's best setting", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="algorithm", title_fontsize=8)
    return fig
