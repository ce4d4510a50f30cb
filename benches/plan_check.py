"""Checks a measured plan's per-decision costs against whole trajectories of the same cells.

`bbrl grid plan CONFIG --every-cell --out DIR` measures each cell on the first few decisions of a
few test MDPs. This runs chosen cells of the same grid on whole trajectories (every decision of
the horizon, one thread) and prints, per cell, the online CPU seconds per decision the plan
implies and the one measured here, so that a study's stated total can say how far the pilot's
early decisions stand for the whole trajectory.

    python benches/plan_check.py paper-accurate /tmp/plan/accurate 'Grid/Grid/(bfs3|sboss)/' --mdps 1

The plan's per-decision figure is its cell cost less the cell's predicted training, divided by
n_mdps * horizon; training is predicted from the plan's own per-kind fit.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bbrl import Experiment
from bbrl.grid import config_path, load_config
from bbrl.grid.plan import offline_units, plan_path
from bbrl.protocol.schema import host_line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", type=Path, help="the grid configuration (or a shipped name)")
    parser.add_argument("plan", type=Path, help="the folder holding plan.json")
    parser.add_argument("pattern", help="a regular expression the cell ids to run must match")
    parser.add_argument("--mdps", type=int, default=1, help="whole trajectories per cell (default 1)")
    parser.add_argument("--limit", type=int, default=50, help="at most this many cells")
    args = parser.parse_args()

    print(host_line(), flush=True)
    config = load_config(config_path(args.config))
    kept = json.loads(plan_path(args.plan).read_text())
    offline_fit = {(e, k): (a, b) for e, k, a, b in kept["offline"]}
    pattern = re.compile(args.pattern)
    cells = [c for c in config.cells if pattern.search(c.id)][: args.limit]
    if not cells:
        print(f"no cell of {args.config} matches {args.pattern!r}", file=sys.stderr)
        return 2
    ratios = []
    print(f"{'cell':<62} {'plan':>10} {'whole':>10} {'ratio':>6}   (CPU seconds per decision)")
    for cell in cells:
        e = cell.experiment
        a, b = offline_fit[(e.key, cell.kind)]
        planned = (kept["cells"][cell.id] - (a + b * offline_units(cell))) / (e.n_mdps * e.horizon)
        trained = cell.spec.train(e.prior_fdm, e.gamma, e.horizon, e.seed)
        started = time.perf_counter()
        run = Experiment(e.test_fdm, n_mdps=args.mdps, gamma=e.gamma, horizon=e.horizon, seed=e.seed).run(
            trained, threads=1
        )
        measured = float(np.sum(run.online_cpu_seconds)) / (args.mdps * e.horizon)
        ratios.append(planned / measured)
        print(
            f"{cell.id:<62} {planned:10.3e} {measured:10.3e} {planned / measured:6.2f}"
            f"   ({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
    low, high = min(ratios), max(ratios)
    print(f"plan / whole trajectories: median {statistics.median(ratios):.2f}, from {low:.2f} to {high:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
