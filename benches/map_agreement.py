"""How many budget-map cells two grid runs share, cell by cell over every experiment.

Draws the maps of two results folders of the same grid (``bbrl grid run`` or ``bbrl paper``) with
one cost model and compares them with ``bbrl.analysis.stats.map_agreement``. The cost models:
``reference`` (the shipped calibration), ``own`` (each folder with its own calibration, fitted on
its cells), ``cross`` (both folders with the first folder's own calibration), ``measured`` (the
measured CPU times, the rule before work was counted).

    python benches/map_agreement.py RUN1 RUN2                       # every cost model
    python benches/map_agreement.py RUN1 RUN2 --machine reference
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import polars as pl

from bbrl.analysis import stats
from bbrl.analysis.report import write_report
from bbrl.protocol.schema import host_line

MODELS = ("reference", "own", "cross", "measured")


def maps(results: Path, machine: str, out: Path) -> dict[str, pl.DataFrame]:
    """The bounds frames of every experiment of ``results`` drawn with ``machine``."""
    write_report(results, out, machine=machine)
    frames = {}
    for path in sorted(out.glob("*-bounds.csv")):
        frame = pl.read_csv(path)
        frames[path.name] = frame.with_columns(pl.col("algorithms").str.split(" "))
    return frames


def agreement(first: Path, second: Path, model: str) -> tuple[int, int]:
    """(identical cells, cells) over every experiment of the two folders under ``model``."""
    with tempfile.TemporaryDirectory() as tmp:
        machines = {
            "reference": ("reference", "reference"),
            "own": ("own", "own"),
            "cross": (str(first / "calibration.json"), str(first / "calibration.json")),
            "measured": ("measured", "measured"),
        }[model]
        if model == "cross":
            maps(first, "own", Path(tmp) / "fit")  # writes first/calibration.json
        a = maps(first, machines[0], Path(tmp) / "a")
        b = maps(second, machines[1], Path(tmp) / "b")
    same = total = 0
    for name in sorted(set(a) | set(b)):
        if name in a and name in b:
            s, t = stats.map_agreement(a[name], b[name])
        else:
            s, t = 0, (a.get(name) if name in a else b[name]).height
        same, total = same + s, total + t
    return same, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--machine", choices=MODELS, action="append", help="cost model(s) (default: every one)")
    args = parser.parse_args()
    print(host_line())
    for model in args.machine or MODELS:
        same, total = agreement(args.first, args.second, model)
        print(f"{model:10s} {same} / {total} identical cells ({100.0 * same / max(total, 1):.1f}%)")


if __name__ == "__main__":
    main()
