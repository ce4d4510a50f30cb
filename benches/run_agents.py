"""Whole-experiment benchmark: every basic agent on the three problems, one thread.

Prints, per (problem, agent), the decisions per second and the cost per decision, and the ratio
to the original C++ library's cost per decision measured on a machine like ours (single thread,
accurate prior, gamma 0.95, T 250).

    python benches/run_agents.py            # N = 500 test MDPs, as the paper
    python benches/run_agents.py --n-mdps 100
"""

from __future__ import annotations

import argparse
import time

import bbrl
from bbrl import agents

#: The original's cost per decision in microseconds (GC, GDL, Grid).
ORIGINAL_US: dict[str, dict[str, float]] = {
    "random": {"GC": 0.04, "GDL": 0.04, "Grid": 0.08},
    "egreedy": {"GC": 11.8, "GDL": 6.3, "Grid": 61.0},
    "softmax": {"GC": 11.8, "GDL": 6.3, "Grid": 61.0},
    "beb": {"GC": 16.0, "GDL": 24.0, "Grid": 437.0},
}

AGENTS = (agents.Random(), agents.EGreedy(epsilon=0.1), agents.SoftMax(tau=1.0), agents.BEB(beta=1.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-mdps", type=int, default=500)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    print(f"N = {args.n_mdps}, T = 250, gamma = 0.95, threads = {args.threads}, accurate prior")
    print(f"{'problem':<6} {'agent':<26} {'decisions/s':>12} {'us/decision':>12} {'original us':>12} {'speed-up':>9}")
    for problem in ("GC", "GDL", "Grid"):
        experiment = bbrl.Experiment(problem, n_mdps=args.n_mdps, gamma=0.95, horizon=250, seed=0)
        for agent in AGENTS:
            start = time.perf_counter()
            run = experiment.run(agent, threads=args.threads)
            wall = time.perf_counter() - start
            per_decision_us = run.online_seconds.sum() / (run.n_mdps * run.horizon) * 1e6
            original = ORIGINAL_US[agent.kind][problem]
            print(
                f"{problem:<6} {agent.label:<26} {run.n_mdps * run.horizon / wall:>12.3g} "
                f"{per_decision_us:>12.3g} {original:>12.3g} {original / per_decision_us:>8.1f}x"
            )


if __name__ == "__main__":
    main()
