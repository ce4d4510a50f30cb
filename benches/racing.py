"""What racing saves and whether its maps agree with the full run's.

    python benches/racing.py run [CONFIG] [--runs 3] [--threads 2]   # full and raced runs, side by side
    python benches/racing.py simulate FOLDER [--margin 1.0] ...     # the race a full run would have made
    python benches/racing.py floor FOLDER [--margin 1.0]            # the most any race could save there

``run`` runs the grid (default: the shipped quick grid) in full and raced, ``--runs`` times each,
alternating, into temporary folders, and prints per run the cells' CPU time (the online CPU time of
every trajectory run plus offline learning: what the maps' costs stand for), the process CPU time
of the whole command (scheduling, files and batches included), wall time, the MDPs run, and the
budget maps' agreement (every cell of every experiment, reference calibration: cells identical,
cells the raced map marks as ones a stopped configuration could have changed, and differing cells
it does not mark); then the medians and their ratios. It checks that each raced cell's rows are
the full run's first rows (returns and work counts), bit for bit.

``simulate`` replays the race on a finished full run (``bbrl.analysis.racing.simulate_race``: a
raced run's rows are the full run's rows, so this is the race a raced run makes) and prints, per
experiment, the stops, the cells' CPU time the race would have spent, and the maps' agreement:
the cheap way to see what racing does on an expensive grid already run in full.

``floor`` is the race's best case on a finished full run: an oracle that knows every MDP's return
stops, at the race's first look, every configuration that a fixed-N paired test at N would stop
(the 95% normal upper bound of its mean difference to a still-running configuration that costs no
more is below 0, or, for a setting of the same algorithm, below the margin), and runs every other
configuration to N. No race that must decide from the first MDPs can spend less; the cells that
remain, per algorithm, are where the floor is.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path

import polars as pl
from scipy import stats as scipy_stats

from bbrl import distributions
from bbrl.analysis import racing
from bbrl.analysis.cost import reference_calibration
from bbrl.analysis.report import compare_maps
from bbrl.analysis.scores import ORACLE_KINDS
from bbrl.protocol.results import Results, load
from bbrl.protocol.schema import Col, host_line
from child_process import timed


def cells_cpu(results: Results) -> float:
    """Online CPU seconds of every trajectory run plus offline CPU seconds of every cell."""
    return float(results.returns[Col.ONLINE_CPU_SECONDS].sum()) + float(results.cells[Col.OFFLINE_TIME].sum())


def maps_agreement(first: Results, second: Results) -> tuple[int, int, int, int]:
    """(identical cells, cells, cells the second map marks as race-sensitive, differing cells it
    does not mark) of the two results' budget maps over every experiment."""
    cells = compare_maps(first, second, reference_calibration())
    unmarked = cells.filter(~pl.col("identical") & ~pl.col("race_sensitive")).height
    return int(cells["identical"].sum()), cells.height, int(cells["race_sensitive"].sum()), unmarked


#: The columns of a cell's rows that do not depend on the machine, the load or the runner.
DETERMINISTIC = [Col.CELL_ID, Col.MDP, Col.RETURN, Col.ONLINE_WORK, Col.OFFLINE_WORK]


def same_rows(full: Results, raced: Results) -> bool:
    """Whether every raced cell's rows are the full run's rows for the MDPs it ran."""
    keys = [Col.CELL_ID, Col.MDP]
    joined = raced.returns.select(DETERMINISTIC).join(full.returns.select(DETERMINISTIC), on=keys, how="left")
    if joined.height != raced.returns.height:
        return False
    return all(joined[c].equals(joined[f"{c}_right"], check_names=False) for c in DETERMINISTIC if c not in keys)


def command_run(args: argparse.Namespace) -> None:
    print(host_line())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            for raced in (False, True):
                out = Path(tmp) / f"{'raced' if raced else 'full'}-{run}"
                command = [sys.executable, "-m", "bbrl", "grid", "run", args.config, "--out", str(out)]
                command += ["--threads", str(args.threads)] + (["--race"] if raced else [])
                load_before = os.getloadavg()[0]
                process_cpu, wall = timed(command)
                results = load(out)
                rows.append(
                    {
                        "run": run,
                        "raced": raced,
                        "wall_s": wall,
                        "process_cpu_s": process_cpu,
                        "cells_cpu_s": cells_cpu(results),
                        "mdps_run": results.returns.height,
                        "load": f"{load_before:.1f}-{os.getloadavg()[0]:.1f}",
                        "_results": results,
                    }
                )
        for run in range(args.runs):
            full, raced = (r["_results"] for r in rows if r["run"] == run)
            same, total, marked, unmarked = maps_agreement(full, raced)
            rows_equal = same_rows(full, raced)
            for r in rows:
                if r["run"] == run:
                    r["maps"] = f"{same}/{total}"
                    r["marked"] = marked
                    r["unmarked_diff"] = unmarked
                    r["rows_equal"] = rows_equal
    frame = pl.DataFrame([{k: v for k, v in r.items() if k != "_results"} for r in rows])
    with pl.Config(tbl_rows=50, tbl_cols=-1, tbl_width_chars=250):
        print(frame)
    for run in range(args.runs):
        full, raced = (r["cells_cpu_s"] for r in rows if r["run"] == run)
        print(f"pair {run}: cells' CPU time raced / full {raced / full:.3f}")
    for column in ("wall_s", "process_cpu_s", "cells_cpu_s", "mdps_run"):
        full = statistics.median(r[column] for r in rows if not r["raced"])
        raced = statistics.median(r[column] for r in rows if r["raced"])
        print(f"median {column}: full {full:.4g}, raced {raced:.4g}, ratio {raced / full:.3f}")


def command_simulate(args: argparse.Namespace) -> None:
    print(host_line())
    results = load(args.folder)
    options = racing.RaceOptions(
        delta=args.delta, margin=args.margin, batch=args.batch, sequence=args.sequence, family_wise=args.family_wise
    )
    calibration = reference_calibration()
    outcome: dict[str, racing.Stop | None] = {}
    for _key, cells in results.cells.group_by([Col.EXPERIMENT, Col.PRIOR], maintain_order=True):
        first = cells.row(0, named=True)
        low, high = racing.return_range(
            distributions.get(first[Col.TEST]).rewards, first[Col.GAMMA], first[Col.HORIZON]
        )
        competing = cells.filter(~pl.col(Col.KIND).is_in(ORACLE_KINDS))
        contenders = racing.contenders_of(results, competing, calibration)
        race = racing.simulate_race(contenders, int(first[Col.N_MDPS]), low, high, options)
        stops = {k: s for k, s in race.items() if s is not None}
        print(f"{first[Col.EXPERIMENT]}/{first[Col.PRIOR]}: {len(stops)} of {len(contenders)} configurations stopped")
        for cell_id, stop in stops.items():
            print(
                f"    {cell_id} after {stop.n_mdps} MDPs, {stop.rule} by {stop.by} [{stop.lower:.3g}, {stop.upper:.3g}]"
            )
        outcome.update(race)
    raced = racing.simulated_results(results, outcome)
    same, total, marked, unmarked = maps_agreement(results, raced)
    full_cpu, raced_cpu = cells_cpu(results), cells_cpu(raced)
    print(f"cells' CPU time: full {full_cpu:.4g} s, raced {raced_cpu:.4g} s, ratio {raced_cpu / full_cpu:.3f}")
    print(f"MDPs run: full {results.returns.height}, raced {raced.returns.height}")
    print(
        f"maps: {same} of {total} cells identical ({100.0 * same / max(total, 1):.1f}%); {marked} marked as "
        f"cells a stopped configuration could change; {unmarked} differing cells unmarked"
    )


def oracle_stops(contenders: list[racing.Contender], n_total: int, margin: float) -> dict[str, racing.Stop | None]:
    """The stops of the oracle :func:`command_floor` describes, at the race's first look: the race's
    rule (:func:`racing.stops_from_bounds`) on the fixed-N normal bounds of all N MDPs."""
    options = racing.RaceOptions(margin=margin)
    first_look = next(e for e in racing.batch_ends(n_total, options.batch_size(n_total)) if e >= racing.MIN_MDPS)
    z = float(scipy_stats.norm.ppf(1.0 - options.delta / 2.0))
    bounds = {}
    for a in contenders:
        for b in contenders:
            if a is not b and racing.precedes(a, b):
                differences = b.returns - a.returns
                s_d = float(differences.std(ddof=1))
                mean, half = float(differences.mean()), z * s_d / math.sqrt(n_total)
                bounds[(a.cell_id, b.cell_id)] = (mean - half, mean + half, s_d)
    outcome: dict[str, racing.Stop | None] = {c.cell_id: None for c in contenders}
    for stop in racing.stops_from_bounds(contenders, bounds, first_look, n_total, margin):
        outcome[stop.cell_id] = stop
    return outcome


def command_floor(args: argparse.Namespace) -> None:
    print(host_line())
    results = load(args.folder)
    calibration = reference_calibration()
    outcome: dict[str, racing.Stop | None] = {}
    for _key, cells in results.cells.group_by([Col.EXPERIMENT, Col.PRIOR], maintain_order=True):
        competing = cells.filter(~pl.col(Col.KIND).is_in(ORACLE_KINDS))
        contenders = racing.contenders_of(results, competing, calibration)
        outcome.update(oracle_stops(contenders, int(cells.row(0, named=True)[Col.N_MDPS]), args.margin))
    floor = racing.simulated_results(results, outcome)
    full_cpu, floor_cpu = cells_cpu(results), cells_cpu(floor)
    stopped = sum(stop is not None for stop in outcome.values())
    print(f"oracle: {stopped} of {len(outcome)} configurations stopped at the first look")
    print(f"cells' CPU time: full {full_cpu:.4g} s, floor {floor_cpu:.4g} s, ratio {floor_cpu / full_cpu:.3f}")
    online = floor.returns.group_by(Col.CELL_ID).agg(pl.col(Col.ONLINE_CPU_SECONDS).sum().alias("online"))
    per_cell = floor.cells.join(online, on=Col.CELL_ID, how="left").with_columns(
        (pl.col("online").fill_null(0.0) + pl.col(Col.OFFLINE_TIME)).alias("cpu_s")
    )
    share = (
        per_cell.group_by(Col.EXPERIMENT, Col.KIND)
        .agg(pl.col("cpu_s").sum())
        .with_columns((pl.col("cpu_s") / floor_cpu).round(3).alias("share_of_floor"))
        .sort("cpu_s", descending=True)
    )
    with pl.Config(tbl_rows=12):
        print(share.head(12))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="full and raced runs side by side")
    run.add_argument("config", nargs="?", default="quick")
    run.add_argument("--runs", type=int, default=3)
    run.add_argument("--threads", type=int, default=2)
    run.set_defaults(handler=command_run)
    simulate = commands.add_parser("simulate", help="the race a finished full run would have made")
    simulate.add_argument("folder", type=Path)
    simulate.add_argument("--delta", type=float, default=racing.DEFAULT_DELTA)
    simulate.add_argument("--margin", type=float, default=racing.DEFAULT_MARGIN)
    simulate.add_argument("--batch", type=int, default=None)
    simulate.add_argument("--sequence", choices=racing.SEQUENCES, default=racing.SEQUENCES[0])
    simulate.add_argument("--family-wise", action="store_true")
    simulate.set_defaults(handler=command_simulate)
    floor = commands.add_parser("floor", help="the most any race could save on a finished full run")
    floor.add_argument("folder", type=Path)
    floor.add_argument("--margin", type=float, default=racing.DEFAULT_MARGIN)
    floor.set_defaults(handler=command_floor)
    args = parser.parse_args()
    args.handler(args)


if __name__ == "__main__":
    main()
