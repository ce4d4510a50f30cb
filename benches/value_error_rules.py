"""Returns per state to certify a value, EBGStop against the betting rule (its default aimed bets, and
the anytime bets alone), side by side on the same states (Sajed et al.'s settings: tau = 1, V_max
100 for Mountain Car and 8000 for Puddle World, per-state epsilon and delta), and the floor no
stopping rule can beat by much: the fixed-n Gaussian interval with the true variance, n =
(z_{1-delta/2} sd / (epsilon (|v| + tau)))^2 per state, sd and v from 2,000 returns. Prints the
machine line first.

    python benches/value_error_rules.py [--states 20] [--epsilons 0.1 0.05] [--delta 0.1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from bbrl import value_error as ve
from bbrl.protocol.schema import host_line
from bbrl.value_error.study import PAPER_V_MAX


def gaussian_floor(env, policy, states, epsilon: float, delta: float, tau: float, length: int) -> np.ndarray:
    z = stats.norm.ppf(1 - delta / 2)
    floor = []
    for i, state in enumerate(states):
        returns, _ = ve.sample_returns(env, policy, state, 2_000, length, seed=1000 + i)
        floor.append((z * returns.std() / (epsilon * (abs(returns.mean()) + tau))) ** 2)
    return np.ceil(np.array(floor))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--states", type=int, default=20)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 0.05])
    parser.add_argument("--delta", type=float, default=0.1)
    args = parser.parse_args()
    print(host_line())
    print(
        "domain        eps    median returns per state: EBGStop  betting  ratio  (anytime bets)  Gaussian floor"
        "   seconds (E, b)"
    )
    rules = {"ebgstop": dict(rule="ebgstop"), "betting": dict(rule="betting"), "anytime": dict(bets="anytime")}
    for domain, v_max in PAPER_V_MAX.items():
        env, policy = ve.paper_setup(domain)
        states = env.uniform_states(args.states, 0)
        for eps in args.epsilons:
            medians, seconds = {}, {}
            for rule, kwargs in rules.items():
                start = time.perf_counter()
                out = ve.state_values(env, policy, states, epsilon=eps, delta=args.delta, value_range=v_max, **kwargs)
                seconds[rule] = time.perf_counter() - start
                medians[rule] = float(np.median(out.n_samples))
            floor = gaussian_floor(env, policy, states, eps, args.delta, 1.0, out.rollout_length)
            print(
                f"{domain:13s} {eps:<6g} {medians['ebgstop']:33,.0f} {medians['betting']:8,.0f} "
                f"{medians['ebgstop'] / medians['betting']:6.1f} {medians['anytime']:15,.0f} {np.median(floor):15,.0f} "
                f"{seconds['ebgstop']:9.1f} {seconds['betting']:5.1f}"
            )


if __name__ == "__main__":
    main()
