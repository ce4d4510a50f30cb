"""Cumulative regret against the oracle, from recorded per-step rewards: when an agent learns.

A single discounted return per trajectory hides *when* an agent gains or loses. With per-step
rewards (``Experiment.run(..., record_rewards=True)``, or ``record_rewards = true`` in a grid), the
regret of an agent on test MDP ``i`` over its first ``t`` steps (t = 1..T) is::

    regret_i(t) = sum_{s = 1..t} (r_opt_i(s) - r_agent_i(s))

with ``r_opt`` the rewards of the reference (the Optimal oracle) on the same test MDP. Its mean over
the N test MDPs, with the 95% interval ``mean ± 1.96 sd / sqrt(N)`` of the paired differences,
is drawn against ``t``: a curve that flattens is an agent that has stopped losing ground.

The pairing is fair because every trajectory on MDP ``i`` draws its transitions from the
environment stream ``(seed, ENVIRONMENT, i)``, whatever the agent (see docs/reports-and-statistics.md).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ..checks import finite_values
from ..intervals import Z_95_TWO_SIDED

if TYPE_CHECKING:
    from ..protocol import Run

__all__ = ["RegretCurve", "cumulative_regret", "per_mdp_cumulative_regret", "plot_cumulative_regret", "regret_curve"]


@dataclass(frozen=True)
class RegretCurve:
    """The mean cumulative regret of one agent against the reference, per step.

    Attributes:
        label: the agent (or algorithm) the curve belongs to.
        mean: mean over the test MDPs of ``regret_i(t)`` for t = 1..T, shape (T,), in reward units.
        ci95: half-width of its 95% interval, ``1.96 sd / sqrt(N)`` (sd with divisor N - 1), shape
            (T,); NaN for a single MDP.
        n_mdps: N, the test MDPs averaged over.
    """

    label: str
    mean: np.ndarray
    ci95: np.ndarray
    n_mdps: int

    @property
    def steps(self) -> np.ndarray:
        """The steps t = 1..T the curve is given at."""
        return np.arange(1, self.mean.size + 1, dtype=np.int64)

    def to_polars(self) -> pl.DataFrame:
        """One row per step: ``label``, ``step`` (1..T), ``mean``, ``ci95``, ``low`` and ``high``."""
        return pl.DataFrame(
            {
                "label": pl.Series([self.label] * self.mean.size, dtype=pl.String),
                "step": self.steps,
                "mean": self.mean,
                "ci95": self.ci95,
                "low": self.mean - self.ci95,
                "high": self.mean + self.ci95,
            }
        )


def _matrix(values: Any, what: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
        raise ValueError(f"{what} must be an (n_mdps, T) array of per-step rewards, got shape {array.shape}")
    if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
        raise TypeError(f"{what} must hold real numbers, got dtype {array.dtype}")
    # Positions in the flattened (n_mdps, T) array: MDP position // T, step position % T.
    return finite_values(array.astype(np.float64, copy=False), f"per_mdp_cumulative_regret: sample {what!r}")


def per_mdp_cumulative_regret(rewards: Any, optimal_rewards: Any) -> np.ndarray:
    """``regret_i(t)`` for every test MDP ``i`` and step t = 1..T: the (N, T) running sums of
    ``optimal_rewards - rewards`` along each row (both (N, T), row ``i`` the same test MDP).

    Raises:
        ValueError: the arrays are not 2-D, differ in shape, or hold a NaN or an infinity (named
            with its positions in the flattened array).
    """
    agent = _matrix(rewards, "rewards")
    optimal = _matrix(optimal_rewards, "optimal_rewards")
    if agent.shape != optimal.shape:
        raise ValueError(
            f"rewards have shape {agent.shape} but the reference's have {optimal.shape}: "
            "both must come from the same test MDPs and horizon"
        )
    return np.cumsum(optimal - agent, axis=1)


def regret_curve(rewards: Any, optimal_rewards: Any, label: str) -> RegretCurve:
    """The mean cumulative regret of ``rewards`` against ``optimal_rewards`` (both (N, T)) with its
    95% interval per step, paired over the MDPs (see :func:`per_mdp_cumulative_regret`)."""
    regret = per_mdp_cumulative_regret(rewards, optimal_rewards)
    n = regret.shape[0]
    mean = regret.mean(axis=0)
    # One MDP gives no spread: NaN, as stats.ci95_halfwidth.
    half = np.full(mean.shape, math.nan) if n < 2 else Z_95_TWO_SIDED * regret.std(axis=0, ddof=1) / math.sqrt(n)
    return RegretCurve(label=label, mean=mean, ci95=half, n_mdps=n)


#: What must agree for two runs to have met the same test MDPs in the same protocol.
_SAME_MDPS = ("experiment", "n_mdps", "gamma", "horizon", "seed")


def cumulative_regret(runs: Sequence[Run], optimal: Run) -> list[RegretCurve]:
    """One :class:`RegretCurve` per run of ``runs`` against the reference run ``optimal`` (usually
    ``Experiment.run(agents.Optimal(), record_rewards=True)``).

    The runs must come from the same experiment: the same test MDPs (experiment name, seed and
    number of MDPs) and the same gamma and horizon; each must have recorded its rewards.

    Raises:
        ValueError: a run without rewards, or from another experiment than ``optimal`` (the message
            names the setting that differs).
    """
    if not runs:
        raise ValueError("no runs to compare with the reference")
    for run in (optimal, *runs):
        if run.rewards is None:
            raise ValueError(f"run of {run.agent!r} has no per-step rewards: run it with record_rewards=True")
    curves = []
    for run in runs:
        differ = [
            f"{k} {getattr(run, k)!r} vs {getattr(optimal, k)!r}"
            for k in _SAME_MDPS
            if getattr(run, k) != getattr(optimal, k)
        ]
        if differ:
            raise ValueError(
                f"run of {run.agent!r} is not on the reference's test MDPs ({'; '.join(differ)}): "
                "regret needs both runs on the same experiment"
            )
        curves.append(regret_curve(run.rewards, optimal.rewards, run.agent))
    return curves


def _final_text(curve: RegretCurve) -> str:
    """The curve's last mean with its 95% half-width, to 3 significant digits (a legend entry)."""
    mean, half = float(curve.mean[-1]), float(curve.ci95[-1])
    # Three significant digits of the mean, and the half-width to the same decimal place (no
    # exponents: the entries are read down a column).
    decimals = max(0, 2 - math.floor(math.log10(max(abs(mean), 1e-12))))
    if not math.isfinite(half):
        return f"{mean:.{decimals}f}"
    return f"{mean:.{decimals}f} ± {half:.{decimals}f}"


def plot_cumulative_regret(
    curves: Sequence[RegretCurve],
    path: str | os.PathLike[str] | None = None,
    title: str = "",
    reference: str = "Optimal",
    colours: Mapping[str, Any] | None = None,
    linestyles: Mapping[str, str] | None = None,
    xlabel: str = "step t",
    ylabel: str | None = None,
    over: str = "test MDPs",
    names: Mapping[str, str] | None = None,
    legend_by_final: bool = False,
) -> Any:
    """Draws each curve's mean cumulative regret against the step with its 95% band; returns the
    matplotlib Figure, also written to ``path`` (PNG, SVG or PDF by its suffix, atomically) if given.

    Args:
        curves: from :func:`cumulative_regret` or :func:`regret_curve`.
        reference: the name of the reference in the axis label.
        colours: a colour per curve label (the report's algorithm colours); matplotlib's cycle
            otherwise.
        linestyles: a line style per curve label (the report's, so that curves stay apart in
            greyscale); solid otherwise.
        xlabel, ylabel: the axes' labels (the episodic protocol's curves are over episodes, with
            the regret against the finite-horizon optimum); ``ylabel`` None: regret against
            ``reference``.
        over: what the mean and band are over, in the title (the episodic protocol's runs).
        names: the legend's name per curve label (e.g. the algorithm without its parameters);
            the label otherwise.
        legend_by_final: list the legend in the order the curves end, highest first, each entry
            with its final mean and 95% half-width: with many curves, lines that end together
            are told apart by reading the legend (the study's 15 agents; the report keeps the
            registry's order, as in its other figures).
    """
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..fileio import write_atomic

    if not curves:
        raise ValueError("no regret curves to draw")
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    handles = []
    for curve in curves:
        colour = (colours or {}).get(curve.label)
        style = (linestyles or {}).get(curve.label, "-")
        name = (names or {}).get(curve.label, curve.label)
        if legend_by_final:
            name += f": {_final_text(curve)}"
        (line,) = ax.plot(curve.steps, curve.mean, color=colour, linestyle=style, linewidth=1.4, label=name)
        handles.append((float(curve.mean[-1]), line))
        if np.isfinite(curve.ci95).any():
            ax.fill_between(
                curve.steps, curve.mean - curve.ci95, curve.mean + curve.ci95, color=line.get_color(), alpha=0.2
            )
    ax.axhline(0.0, color="0.35", linestyle="--", linewidth=1.0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel or f"mean cumulative regret against {reference}\n(sum of reward differences up to t)")
    n = curves[0].n_mdps
    ax.set_title((title + "\n" if title else "") + f"mean over N = {n} {over}, 95% band (paired)", fontsize=10)
    ax.grid(True, alpha=0.3)
    if legend_by_final:
        ordered = [line for _, line in sorted(handles, key=lambda pair: -pair[0])]
        title = f"agent: regret at {xlabel.split()[-1]} = {int(curves[0].steps[-1])}, highest first"
        ax.legend(
            handles=ordered, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title=title, title_fontsize=8
        )
    else:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="agent", title_fontsize=8)
    if path is not None:
        target = Path(path)
        buffer = io.BytesIO()
        fig.savefig(buffer, format=target.suffix.lstrip(".") or "png", dpi=120, bbox_inches="tight")
        write_atomic(target, buffer.getvalue())
    return fig
