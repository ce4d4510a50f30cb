"""What a certification will cost before it starts: returns and environment steps per state from
a small pilot, extrapolated in epsilon.

The pilot runs the stopping rule at ``pilot_states`` states at two accuracies no finer than 0.05
(cheap), fits returns ~ epsilon^-k through them (k clipped to [1, 2]: between the range-bound and
the variance-bound regimes) and extrapolates to the epsilon asked. It is an estimate, good to about
a factor of two, for refusing a run that would take hours, not a promise.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from .envs import Environment, Policy
from .references import state_values
from .stopping import DEFAULT_BETS, Bets, Rule


@dataclass(frozen=True)
class CostEstimate:
    """Expected work of certifying ``states`` states."""

    states: int
    returns_per_state: float
    """Mean returns sampled per state (extrapolated from the pilot)."""
    steps_per_return: float
    """Mean environment steps per return in the pilot."""
    steps_per_second: float
    """The pilot's throughput on the threads it ran on."""

    @property
    def returns(self) -> float:
        return self.states * self.returns_per_state

    @property
    def steps(self) -> float:
        return self.returns * self.steps_per_return

    @property
    def seconds(self) -> float:
        return self.steps / self.steps_per_second

    def describe(self) -> str:
        """One line: returns, steps and time, with their units."""
        return (
            f"about {self.returns:.3g} returns ({self.returns_per_state:.3g} per state x {self.states} states), "
            f"{self.steps:.3g} steps, {_duration(self.seconds)} at the pilot's {self.steps_per_second:.3g} steps/s"
        )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass(frozen=True)
class Pilot:
    """Returns per state at two accuracies, and the speed, measured on a few states."""

    epsilons: tuple[float, float]
    mean_returns: tuple[float, float]
    steps_per_return: float
    steps_per_second: float

    def returns_per_state(self, epsilon: float) -> float:
        """Mean returns per state at ``epsilon``: returns ~ epsilon^-k through the two pilot
        points, k clipped to [1, 2]."""
        (coarse, fine), (n_coarse, n_fine) = self.epsilons, self.mean_returns
        if coarse == fine or epsilon >= fine:
            return n_fine if epsilon <= fine else n_coarse
        k = min(max(math.log(n_fine / n_coarse) / math.log(coarse / fine), 1.0), 2.0)
        return float(n_fine * (fine / epsilon) ** k)

    def cost(self, states: int, epsilon: float) -> CostEstimate:
        return CostEstimate(states, self.returns_per_state(epsilon), self.steps_per_return, self.steps_per_second)


def run_pilot(
    env: Environment,
    policy: Policy,
    *,
    epsilon: float,
    delta: float,
    tau: float = 1.0,
    rule: Rule = "betting",
    bets: Bets = DEFAULT_BETS,
    value_range: float | None = None,
    rollout_length: int | None = None,
    pilot_states: int = 4,
    seed: int = 0,
    threads: int | None = None,
) -> Pilot:
    """Runs ``rule`` at ``pilot_states`` states (drawn with ``seed`` + 1, so the pilot is not the
    study) at max(epsilon, 0.1) and max(epsilon, 0.05), per-state (``delta``, ``tau``)."""
    states = env.uniform_states(pilot_states, seed + 1)
    coarse = max(epsilon, 0.1)
    fine = max(epsilon, 0.05) if coarse > 0.05 else coarse
    means = []
    steps = returns = 0
    start = time.perf_counter()
    for eps in dict.fromkeys((coarse, fine)):
        out = state_values(
            env, policy, states, epsilon=eps, delta=delta, tau=tau, rule=rule, bets=bets, value_range=value_range,
            rollout_length=rollout_length, seed=seed + 1, threads=threads,
        )  # fmt: skip
        means.append(float(np.mean(out.n_samples)))
        steps += int(out.n_steps.sum())
        returns += int(out.n_samples.sum())
    seconds = max(time.perf_counter() - start, 1e-6)
    return Pilot((coarse, fine), (means[0], means[-1]), steps / max(returns, 1), steps / seconds)
