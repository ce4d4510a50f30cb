"""Summaries of a grid's results per algorithm: the best setting's returns, normalised scores and
their aggregates, and the cumulative regret against the oracle."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from .. import agents
from ..protocol.results import Results, returns_matrix, rewards_matrix
from ..protocol.schema import Col
from .regret import RegretCurve, regret_curve
from .stats import (
    best_per_algorithm,
    mean_ci95,
    normalized_scores,
    probability_of_improvement,
    stratified_bootstrap_cis,
)

__all__ = [
    "ORACLE_KINDS",
    "NormalizedScores",
    "NormalizedSummary",
    "best_settings",
    "normalized_by_experiment",
    "normalized_summary",
    "regret_curves",
]

#: Agents that see the true MDP: drawn as reference levels, left out of the best-algorithm map.
ORACLE_KINDS = ("optimal",)


def regret_curves(results: Results, cells: pl.DataFrame) -> dict[str, RegretCurve]:
    """The cumulative regret against the oracle of each algorithm's best setting (highest mean)
    among ``cells`` (one experiment's), from their recorded per-step rewards, by algorithm (each
    curve labelled with its setting); empty when the oracle's cell or every other cell lacks them.

    Raises:
        ValueError: the cells are not all on the same test MDPs (test, N, seed, T).
    """
    if Col.HAS_REWARDS not in cells.columns:
        return {}
    recorded = cells.filter(pl.col(Col.HAS_REWARDS))
    oracle = recorded.filter(pl.col(Col.KIND).is_in(ORACLE_KINDS))
    competing = recorded.filter(~pl.col(Col.KIND).is_in(ORACLE_KINDS))
    if oracle.height == 0 or competing.height == 0:
        return {}
    # Same test distribution, number of MDPs and seed: the same MDPs; and the same horizon.
    for column in (Col.TEST, Col.N_MDPS, Col.SEED, Col.HORIZON, Col.GAMMA):
        if recorded[column].n_unique() > 1:
            raise ValueError(f"cells of one experiment differ in {column}: their regrets cannot be paired")
    reference = rewards_matrix(results, oracle[Col.CELL_ID][0])
    return {
        row[Col.ALGORITHM]: regret_curve(rewards_matrix(results, row[Col.CELL_ID]), reference, row[Col.LABEL])
        for row in best_per_algorithm(competing).iter_rows(named=True)
    }


def best_settings(results: Results, cells: pl.DataFrame) -> dict[str, dict[str, np.ndarray]]:
    """Per experiment key, the per-MDP returns of each algorithm's best setting (highest mean)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    best = best_per_algorithm(cells, within=("experiment", "prior"))
    for row in best.iter_rows(named=True):
        key = f"{row[Col.EXPERIMENT]}/{row[Col.PRIOR]}"
        out.setdefault(key, {})[row[Col.ALGORITHM]] = returns_matrix(results, [row[Col.CELL_ID]])[0]
    return out


@dataclass
class NormalizedSummary:
    """Normalised scores of each algorithm's best setting.

    ``per_experiment``: one row per (experiment, algorithm) with the mean normalised score and its
    95% interval; ``aggregate``: one row per algorithm present in every normalisable experiment,
    with the IQM and the mean over all (experiment, MDP) scores and their stratified-bootstrap 95%
    intervals, and the probability that it improves on the best of the others. ``skipped`` names
    the experiments without both a Random and an Optimal cell (nothing to normalise by)."""

    per_experiment: pl.DataFrame
    aggregate: pl.DataFrame
    scores: dict[str, dict[str, np.ndarray]]
    skipped: list[str]


@dataclass
class NormalizedScores:
    """Each experiment's normalised scores ``(return - R_random) / (R_optimal - R_random)`` per test
    MDP, by experiment key (``name/prior``) and algorithm (its best setting; the oracle left out),
    with ``levels``, each experiment's ``(R_random, R_optimal)``: the mean scores of its Random and
    Optimal cells. ``skipped`` names the experiments without both cells, or where Optimal does not
    score above Random (nothing to normalise by)."""

    scores: dict[str, dict[str, np.ndarray]]
    levels: dict[str, tuple[float, float]]
    skipped: list[str]


def normalized_by_experiment(results: Results, cells: pl.DataFrame) -> NormalizedScores:
    """The normalised scores of every experiment of ``cells``: the one place the normalisation's
    reference levels are taken (the report and ``bbrl export`` read them here)."""
    scores: dict[str, dict[str, np.ndarray]] = {}
    levels: dict[str, tuple[float, float]] = {}
    skipped: list[str] = []
    random_name, optimal_name = agents.Random.display, agents.Optimal.display
    for key, by_algorithm in best_settings(results, cells).items():
        if random_name not in by_algorithm or optimal_name not in by_algorithm:
            skipped.append(key)
            continue
        low, high = float(by_algorithm[random_name].mean()), float(by_algorithm[optimal_name].mean())
        if not high > low:
            skipped.append(key)
            continue
        levels[key] = (low, high)
        scores[key] = {
            algorithm: normalized_scores(returns, low, high)
            for algorithm, returns in by_algorithm.items()
            if algorithm != optimal_name
        }
    return NormalizedScores(scores, levels, skipped)


def normalized_summary(results: Results, cells: pl.DataFrame, seed: int = 0) -> NormalizedSummary:
    """Normalised scores ``(score - Random) / (Optimal - Random)`` per experiment, with Random and
    Optimal the experiment's mean scores of those agents, and their aggregates over experiments."""
    normalized = normalized_by_experiment(results, cells)
    scores, skipped = normalized.scores, normalized.skipped
    rows = []
    for key, by_algorithm in scores.items():
        for algorithm, values in by_algorithm.items():
            mean, half = mean_ci95(values)
            rows.append({Col.EXPERIMENT: key, Col.ALGORITHM: algorithm, Col.MEAN: mean, Col.CI95: half})
    per_experiment = pl.DataFrame(
        rows, schema={Col.EXPERIMENT: pl.String, Col.ALGORITHM: pl.String, Col.MEAN: pl.Float64, Col.CI95: pl.Float64}
    )
    keys = list(scores)
    common = [a for a in dict.fromkeys(a for k in keys for a in scores[k]) if all(a in scores[k] for k in keys)]
    aggregate_rows = []
    for algorithm in common:
        strata = [scores[k][algorithm] for k in keys]
        both = stratified_bootstrap_cis(strata, ("iqm", "mean"), seed=seed)
        (iqm_estimate, iqm_low, iqm_high), (mean_estimate, mean_low, mean_high) = both["iqm"], both["mean"]
        aggregate_rows.append(
            {
                Col.ALGORITHM: algorithm,
                "iqm": iqm_estimate,
                "iqm_low": iqm_low,
                "iqm_high": iqm_high,
                Col.MEAN: mean_estimate,
                "mean_low": mean_low,
                "mean_high": mean_high,
            }
        )
    aggregate = pl.DataFrame(
        aggregate_rows,
        schema={
            Col.ALGORITHM: pl.String,
            **{c: pl.Float64 for c in ("iqm", "iqm_low", "iqm_high", "mean", "mean_low", "mean_high")},
        },
    ).sort("iqm", descending=True)
    if aggregate.height:
        leader = aggregate[Col.ALGORITHM][0]
        improvement = [
            math.nan
            if a == leader
            else probability_of_improvement([scores[k][leader] for k in keys], [scores[k][a] for k in keys])
            for a in aggregate[Col.ALGORITHM].to_list()
        ]
        aggregate = aggregate.with_columns(pl.Series("p_leader_better", improvement, dtype=pl.Float64))
    return NormalizedSummary(per_experiment, aggregate, scores, skipped)
