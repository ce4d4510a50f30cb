"""Drawing replay's learning curves (matplotlib): a mean return per episode index with its 95% band."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

__all__ = ["band", "plot_learning_curve"]


def plot_learning_curve(curve: pl.DataFrame, truth: pl.DataFrame | None, ax: Any = None, label: str = "replay") -> Any:
    """Draws ``curve`` (episode, runs, mean, ci95) with its band, and, if given, the ``truth``
    curve of the same form with its band; returns the axes (new ones when ``ax`` is None)."""
    import matplotlib

    if ax is None:
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(7, 4))
    band(ax, curve, label, "C0")
    if truth is not None:
        band(ax, truth, "online truth", "C1")
    ax.set_xlabel("episode")
    ax.set_ylabel("discounted return")
    ax.legend()
    return ax


def band(ax: Any, curve: pl.DataFrame, label: str, color: str) -> None:
    x = curve["episode"].to_numpy()
    mean = curve["mean"].to_numpy()
    half = np.nan_to_num(curve["ci95"].to_numpy())
    ax.plot(x, mean, color=color, label=label)
    ax.fill_between(x, mean - half, mean + half, color=color, alpha=0.25, linewidth=0)
