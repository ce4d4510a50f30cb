"""Per-step overhead of a Python agent against the Rust Random agent.

    python benches/python_agent_overhead.py [--problem GC] [--n-mdps 200] [--horizon 250] [--repeats 3]

Runs on one process (threads=1), so it measures the cost of the callback boundary: the Rust loop
calling the agent's ``act`` and ``observe`` with the GIL, checking the action, and the agent's own
Python code. Reports the online time per decision (the protocol's measure: reset + T decisions
per trajectory, divided by T) and the whole ``Experiment.run`` wall time per decision (which adds
the per-MDP deep copy of the agent and the Generator it is given). Best of ``--repeats``.
"""

from __future__ import annotations

import argparse
import time

import bbrl
from bbrl import agents
from bbrl.protocol.schema import host_line


class UniformPython(agents.Agent):
    """A trivial Python agent: uniformly random actions from the Generator it is handed."""

    def act(self, state, rng):
        return int(rng.integers(self.n_actions))


class ConstantPython(agents.Agent):
    """The cheapest possible Python agent: the boundary's cost alone."""

    def act(self, state, rng):
        return 0


def measure(exp: bbrl.Experiment, agent, repeats: int) -> tuple[float, float]:
    best_online, best_wall = float("inf"), float("inf")
    steps = exp.n_mdps * exp.horizon
    for _ in range(repeats):
        start = time.perf_counter()
        run = exp.run(agent, threads=1)
        wall = time.perf_counter() - start
        best_online = min(best_online, float(run.online_seconds.sum()) / steps)
        best_wall = min(best_wall, wall / steps)
    return best_online, best_wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="GC")
    parser.add_argument("--n-mdps", type=int, default=200)
    parser.add_argument("--horizon", type=int, default=250)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    exp = bbrl.Experiment(args.problem, n_mdps=args.n_mdps, horizon=args.horizon, seed=0)
    print(host_line())
    print(f"{args.problem}, N = {args.n_mdps}, T = {args.horizon}, one process, best of {args.repeats}")
    print(f"{'agent':<34}{'online us/decision':>20}{'run() us/decision':>20}")
    rust_online = None
    for name, agent in (
        ("Random (Rust)", agents.Random()),
        ("ConstantPython (returns 0)", ConstantPython()),
        ("UniformPython (rng.integers)", UniformPython()),
    ):
        online, wall = measure(exp, agent, args.repeats)
        rust_online = rust_online or online
        extra = "" if name.endswith("(Rust)") else f"   +{(online - rust_online) * 1e6:.2f} us"
        print(f"{name:<34}{online * 1e6:>20.3f}{wall * 1e6:>20.3f}{extra}")


if __name__ == "__main__":
    main()
