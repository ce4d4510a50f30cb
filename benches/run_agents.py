"""Whole-experiment benchmark: agents on the three problems, accurate prior, one thread.

Prints, per (problem, agent), the decisions per second and the cost per decision (online wall
time / (N * T)), and the ratio to the original C++ library's cost per decision measured on a
machine like ours (single thread, accurate prior, gamma 0.95, T 250).

    python benches/run_agents.py                              # the four basic agents, N = 500
    python benches/run_agents.py --set planners --n-mdps 20   # BAMCP, BFS3, SBOSS
    python benches/run_agents.py --set all --n-mdps 50
"""

from __future__ import annotations

import argparse
import time

import bbrl
from bbrl import agents
from bbrl.protocol.schema import host_line

#: (agent, the original's cost per decision in microseconds on GC, GDL, Grid; None: not measured).
BASIC: list[tuple[agents.AgentSpec, dict[str, float] | None]] = [
    (agents.Random(), {"GC": 0.04, "GDL": 0.04, "Grid": 0.08}),
    (agents.EGreedy(epsilon=0.1), {"GC": 11.8, "GDL": 6.3, "Grid": 61.0}),
    (agents.SoftMax(tau=1.0), {"GC": 11.8, "GDL": 6.3, "Grid": 61.0}),
    (agents.BEB(beta=1.0), {"GC": 16.0, "GDL": 24.0, "Grid": 437.0}),
]
PLANNERS: list[tuple[agents.AgentSpec, dict[str, float] | None]] = [
    (agents.SBOSS(epsilon=1e-3, delta=7.0, compat=True), {"GC": 5.2, "GDL": 24.0, "Grid": 150.0}),
    (agents.BAMCP(k=500, depth=15), {"GC": 1470.0, "GDL": 3000.0, "Grid": 44000.0}),
    (agents.BAMCP(k=2500, depth=15), {"GC": 7600.0, "GDL": 16000.0, "Grid": 222000.0}),
    (agents.BFS3(k=500, c=15, depth=15), {"GC": 19300.0, "GDL": 9200.0, "Grid": 48900.0}),
]
OTHERS: list[tuple[agents.AgentSpec, dict[str, float] | None]] = [
    (agents.PSRL(), None),
    (agents.Formula("X0"), None),
    (agents.Optimal(), None),
]
SETS = {"basic": BASIC, "planners": PLANNERS, "others": OTHERS, "all": BASIC + PLANNERS + OTHERS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-mdps", type=int, default=500)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--set", choices=sorted(SETS), default="basic")
    parser.add_argument("--problems", nargs="+", default=["GC", "GDL", "Grid"])
    args = parser.parse_args()
    print(host_line())
    print(f"N = {args.n_mdps}, T = 250, gamma = 0.95, threads = {args.threads}, accurate prior")
    print(f"{'problem':<6} {'agent':<40} {'decisions/s':>12} {'us/decision':>12} {'original us':>12} {'speed-up':>9}")
    for problem in args.problems:
        experiment = bbrl.Experiment(problem, n_mdps=args.n_mdps, gamma=0.95, horizon=250, seed=0)
        for agent, original in SETS[args.set]:
            start = time.perf_counter()
            run = experiment.run(agent, threads=args.threads)
            wall = time.perf_counter() - start
            per_decision_us = run.online_seconds.sum() / (run.n_mdps * run.horizon) * 1e6
            reference = original[problem] if original else float("nan")
            speed_up = f"{reference / per_decision_us:>8.1f}x" if original else f"{'-':>9}"
            print(
                f"{problem:<6} {agent.label:<40} {run.n_mdps * run.horizon / wall:>12.3g} "
                f"{per_decision_us:>12.3g} {reference:>12.3g} {speed_up}"
            )


if __name__ == "__main__":
    main()
