"""How many cells of a results folder's budget maps are boundaries under a cost model.

A map cell is a boundary when its answer changes as an agent's cost moves within the calibration's
uncertainty for that algorithm (docs/reports-and-statistics.md): the better the cost model fits,
the fewer boundaries. This draws the maps of ``RESULTS`` (``bbrl report``'s rules: the default
budget grid and boundary rule) with the cost model ``--machine`` (``reference``: the shipped
calibration, ``own``: fitted on the folder's cells, or a calibration file) and prints the
boundary cells per experiment and in all.

    python benches/map_boundaries.py RESULTS --machine reference
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import polars as pl

from bbrl.analysis.report import write_report
from bbrl.protocol.schema import host_line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path)
    parser.add_argument("--machine", default="reference", help="the cost model (default reference)")
    args = parser.parse_args()
    print(host_line())
    boundaries = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        write_report(args.results, Path(tmp), machine=args.machine)
        for path in sorted(Path(tmp).glob("*-bounds.csv")):
            frame = pl.read_csv(path)
            marked = int(frame["boundary"].sum())
            print(f"{path.name.removesuffix('-bounds.csv'):24s} {marked:4d} of {frame.height:4d} boundary cells")
            boundaries, total = boundaries + marked, total + frame.height
    print(f"in all: {boundaries} of {total} cells are boundaries ({100.0 * boundaries / max(total, 1):.1f}%)")


if __name__ == "__main__":
    main()
