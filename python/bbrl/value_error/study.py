"""Sajed et al.'s Figure 1 (returns sampled per state to certify a value) with both stopping rules
side by side: m states uniform over the state space, each certified by Algorithm 2 at per-state
(epsilon, delta), tau = 1, the paper's V_max as the range of the returns.

:func:`plan` runs a pilot and states the cost before anything long starts; :func:`run` computes
the grid cell by cell (domain x epsilon x delta x rule), reporting each cell as it ends;
:func:`summary` gives the medians and quartiles of the figure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from .cost import CostEstimate, Pilot, run_pilot
from .envs import paper_setup
from .references import state_values
from .stopping import RULES, check_rule

#: The range of the returns the paper states for each domain (its V_max, value units).
PAPER_V_MAX = {"MountainCar": 100.0, "PuddleWorld": 8000.0}


@dataclass(frozen=True)
class StudySettings:
    """One study: every combination of domain, epsilon, delta and rule at ``states`` states."""

    domains: tuple[str, ...] = ("MountainCar", "PuddleWorld")
    states: int = 100
    """States per domain (the paper's m = 100), drawn uniformly over the state space."""
    epsilons: tuple[float, ...] = (0.1, 0.05, 0.01)
    deltas: tuple[float, ...] = (0.1, 0.01)
    rules: tuple[str, ...] = RULES
    tau: float = 1.0
    seed: int = 0
    threads: int | None = None
    skip: tuple[tuple[str, float], ...] = ()
    """(domain, epsilon) pairs left out (``quick`` leaves out Puddle World at 0.01)."""

    def cells(self) -> list[tuple[str, float, float, str]]:
        """(domain, epsilon, delta, rule) of every cell, in the order they run."""
        return [
            (d, e, dl, r)
            for d in self.domains
            for e in self.epsilons
            if (d, e) not in self.skip
            for dl in self.deltas
            for r in self.rules
        ]


def quick(settings: StudySettings) -> StudySettings:
    """The few-minute version: 20 states and no Puddle World at epsilon = 0.01 (about 10^9 steps
    per state with EBGStop)."""
    skip = tuple((d, e) for d in settings.domains for e in settings.epsilons if d == "PuddleWorld" and e < 0.05)
    return replace(settings, states=min(settings.states, 20), skip=settings.skip + skip)


@dataclass(frozen=True)
class Plan:
    """The study's expected cost, cell by cell."""

    cells: list[tuple[tuple[str, float, float, str], CostEstimate]]

    @property
    def returns(self) -> float:
        return sum(c.returns for _, c in self.cells)

    @property
    def steps(self) -> float:
        return sum(c.steps for _, c in self.cells)

    @property
    def seconds(self) -> float:
        return sum(c.seconds for _, c in self.cells)


def plan(settings: StudySettings) -> Plan:
    """A pilot of 4 states per domain, rule and delta (two accuracies no finer than 0.05) and the
    cost of each cell extrapolated from it."""
    pilots: dict[tuple[str, str, float], Pilot] = {}
    cells = []
    for cell in settings.cells():
        domain, epsilon, delta, rule = cell
        key = (domain, rule, delta)
        if key not in pilots:
            env, policy = paper_setup(domain)
            pilots[key] = run_pilot(
                env, policy, epsilon=min(settings.epsilons), delta=delta, tau=settings.tau,
                rule=check_rule(rule), value_range=PAPER_V_MAX[domain], seed=settings.seed, threads=settings.threads,
            )  # fmt: skip
        cells.append((cell, pilots[key].cost(settings.states, epsilon)))
    return Plan(cells)


def run(
    settings: StudySettings,
    progress: Callable[[int, int, tuple[str, float, float, str], float, int], None] | None = None,
) -> pl.DataFrame:
    """Every cell of the study: one row per (domain, epsilon, delta, rule, state) with the
    value, returns sampled, steps, how it stopped and the seconds of its cell. ``progress(i,
    total, cell, seconds, returns)`` is called after each cell."""
    frames = []
    cells = settings.cells()
    states = {}
    for i, (domain, epsilon, delta, rule) in enumerate(cells):
        env, policy = paper_setup(domain)
        if domain not in states:
            states[domain] = env.uniform_states(settings.states, settings.seed)
        start = time.perf_counter()
        out = state_values(
            env, policy, states[domain], epsilon=epsilon, delta=delta, tau=settings.tau, rule=check_rule(rule),
            value_range=PAPER_V_MAX[domain], seed=settings.seed, threads=settings.threads,
        )  # fmt: skip
        seconds = time.perf_counter() - start
        frames.append(
            pl.DataFrame(
                {
                    "domain": domain,
                    "epsilon": epsilon,
                    "delta": delta,
                    "rule": rule,
                    "state": np.arange(settings.states),
                    "state_0": states[domain][:, 0],
                    "state_1": states[domain][:, 1],
                    "value": out.values,
                    "returns": out.n_samples.astype(np.int64),
                    "steps": out.n_steps.astype(np.int64),
                    "reason": list(out.reasons),
                    "rollout_length": out.rollout_length,
                    "value_range": out.value_range,
                    "cell_seconds": seconds,
                }
            )
        )
        if progress is not None:
            progress(i + 1, len(cells), (domain, epsilon, delta, rule), seconds, int(out.n_samples.sum()))
    return pl.concat(frames)


def summary(rows: pl.DataFrame) -> pl.DataFrame:
    """Per (domain, epsilon, delta, rule): the median, quartiles and largest count of returns per
    state, the states left uncertified, and for the betting rule how many times fewer returns its
    median needs than EBGStop's."""
    keys = ["domain", "epsilon", "delta"]
    table = (
        rows.group_by([*keys, "rule"], maintain_order=True)
        .agg(
            pl.len().alias("states"),
            pl.col("returns").median().alias("median"),
            pl.col("returns").quantile(0.25, "linear").alias("q25"),
            pl.col("returns").quantile(0.75, "linear").alias("q75"),
            pl.col("returns").max().alias("max"),
            (~pl.col("reason").is_in(["relative", "absolute"])).sum().alias("uncertified"),
            pl.col("cell_seconds").first().alias("seconds"),
        )
        .sort([*keys, "rule"], descending=[False, True, True, False])
    )
    paper = table.filter(pl.col("rule") == "ebgstop").select([*keys, pl.col("median").alias("ebgstop_median")])
    return (
        table.join(paper, on=keys, how="left")
        .with_columns((pl.col("ebgstop_median") / pl.col("median")).alias("fewer_than_ebgstop"))
        .drop("ebgstop_median")
    )


def domain_names(names: Sequence[str]) -> tuple[str, ...]:
    """Canonical names of the domains of the study (MountainCar, PuddleWorld)."""
    from ..envs import registry

    out = tuple(registry.canonical(n) for n in names)
    bad = [n for n in out if n not in PAPER_V_MAX]
    if bad:
        raise ValueError(f"the study covers {', '.join(PAPER_V_MAX)}; got {', '.join(bad)}")
    return out
