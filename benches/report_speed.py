"""CPU time of writing a grid's report: ``bbrl report RESULTS --out <temporary folder>`` in a fresh
process each run, user + system CPU of that process (median of ``--runs``), beside the CPU time of
a process that only imports what the report imports (the floor no report work can lower).

    bbrl paper --quick                        # once: the quick grid's results (about a minute)
    python benches/report_speed.py bbrl-paper-quick --runs 5

Prints the machine (CPU model and vector path), its load before the runs, and one table row per
command. The command line is the installed ``bbrl`` script when there is one beside the
interpreter, else ``python -m bbrl``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from child_process import bbrl_command, timed

#: What the report imports before it draws (the command line, the report, matplotlib's pyplot),
#: with the command line's thread settings made first, as ``bbrl`` makes them.
IMPORTS = "from bbrl.cli import app; app._one_thread_pools(); import bbrl.analysis.report, matplotlib.pyplot"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a grid's results folder (bbrl grid run, bbrl paper)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (default 5)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if not args.results.is_dir():
        parser.error(f"no results folder at {args.results} (run `bbrl paper --quick` first)")
    from bbrl.protocol.schema import host_line

    print(host_line())
    print(f"load average before the runs: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "report"
        commands = {
            "the report's imports alone": [sys.executable, "-c", IMPORTS],
            f"bbrl report {args.results}": [*bbrl_command(), "report", str(args.results), "--out", str(out)],
        }
        print("| command | median CPU (user + sys) | min | max | median wall |")
        print("|---|---|---|---|---|")
        for name, command in commands.items():
            runs = []
            for _ in range(args.runs):
                shutil.rmtree(out, ignore_errors=True)
                runs.append(timed(command))
            cpu = [c for c, _ in runs]
            wall = statistics.median(w for _, w in runs)
            print(f"| `{name}` | {statistics.median(cpu):.2f} s | {min(cpu):.2f} s | {max(cpu):.2f} s | {wall:.2f} s |")
        figures = len(list(out.glob("*.png")))
    print(f"({figures} figures per report)")


if __name__ == "__main__":
    main()
