"""Drawing replay's learning curves (matplotlib): a mean return per episode index with its 95% band,
and the share of runs that reached each episode."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

__all__ = ["band", "plot_learning_curve", "plot_share"]


def plot_learning_curve(
    curve: pl.DataFrame,
    truth: pl.DataFrame | None,
    ax: Any = None,
    label: str = "replay",
    gamma: float | None = None,
) -> Any:
    """Draws ``curve`` (episode, runs, share, mean, ci95) with its band, and, if given, the ``truth``
    curve of the same form with its band; the curve's share of runs reaching each episode goes in
    a panel below (new figure) or on a second axis of ``ax``. The returns' axis names their
    discount ``gamma`` when given. Returns the axes of the returns (new ones when ``ax`` is None)."""
    import matplotlib

    panel = ax is None
    if panel:
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        _, (ax, share_ax) = plt.subplots(
            2, 1, figsize=(7, 5), sharex=True, gridspec_kw={"height_ratios": [3, 1], "hspace": 0.08}
        )
    else:
        share_ax = ax.twinx()
    band(ax, curve, label, "C0")
    if truth is not None:
        band(ax, truth, "online truth", "C1")
    if gamma is None:
        ax.set_ylabel("discounted return")
    else:
        ax.set_ylabel("undiscounted return" if gamma == 1.0 else f"return, discount {gamma:g}")
    ax.legend()
    plot_share(share_ax, curve)
    (share_ax if panel else ax).set_xlabel("episode")
    return ax


def band(ax: Any, curve: pl.DataFrame, label: str, color: str) -> None:
    """The mean line and its 95% band; episodes whose interval is unknown (a single run) get no band."""
    x = curve["episode"].to_numpy()
    mean = curve["mean"].to_numpy()
    half = curve["ci95"].to_numpy().astype(np.float64)
    known = np.isfinite(half)
    ax.plot(x, mean, color=color, label=label)
    if known.any():
        ax.fill_between(x, mean - half, mean + half, where=known, color=color, alpha=0.25, linewidth=0)
    single = ~known & (curve["runs"].to_numpy() == 1)
    if single.any():
        ax.plot(x[single], mean[single], linestyle="none", marker=".", color=color, label=f"{label}: one run, no band")


def plot_share(ax: Any, curve: pl.DataFrame) -> None:
    """The share of runs that reached each episode, in [0, 1]."""
    ax.step(curve["episode"].to_numpy(), curve["share"].to_numpy(), where="mid", color="0.35", linewidth=1.2)
    ax.set_ylim(0.0, 1.05)
    ax.set_ylabel("share of runs\nreaching it")
