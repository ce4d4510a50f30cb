"""Fits a calibration (seconds per work unit) on a grid's cells, measured so that the load of a
shared machine and the timer move it as little as they can: the shipped one is made with this.

A cell's online cost is its mean CPU time per trajectory (each trajectory's thread CPU time, as
every run records it), measured in batches long enough to measure: a sizing pass runs each cell on
its first ``--mdps`` test MDPs (and trains it), and from then on each cell runs on its first
``m`` test MDPs, ``m`` the smallest count (at least ``--mdps``, at most ``--max-mdps``) whose
trajectories take ``--batch-ms`` milliseconds by the sizing pass, so that a microsecond agent is
timed over thousands of trajectories and not ten. This is done ``--rounds`` times, the cells in a
different order each round; each round gives the batch's mean per trajectory, and the cell's cost
is the median of the rounds (a batch preempted, or slowed by a neighbour, in one round does not
count). The work of a batch is the same in every round (the same seeded computation): its mean per
trajectory is the row's work. Cells that learn offline are trained once per round, and their
training cost is the median of the rounds' CPU times. The rows (:func:`bbrl.analysis.cost.calibration_rows`'
columns) are written to ``OUT/NAME-rows.csv`` and the calibration fitted on them to ``OUT/NAME.json``.

    python benches/calibrate.py benches/calibration-grid.toml --out python/bbrl/data/calibrations --rounds 21

The machine (CPU, vector extensions, cores) and the load average before and after every round are
recorded in the calibration.

``--recount CALIBRATION.json`` measures no time: it keeps the CPU times of that calibration's rows
(``NAME-rows.csv`` beside it) and its machine and date, counts each cell's work again with this
build (once: the counts of a seeded run are the same in every round) on as many test MDPs as each
row was measured on, and refits. This is how a calibration measured on an idle machine follows a
change of the work units without being measured again on a busy one.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import bbrl
from bbrl import Experiment
from bbrl.analysis.cost import ROW_COLUMNS, fit_rows, load_calibration
from bbrl.fileio import read_table, write_atomic
from bbrl.grid import config_path, load_config
from bbrl.protocol.schema import WORK_UNITS, Col, describe_host, host_line

#: The column of the rows that says on how many test MDPs (the first ones) a row was measured.
MDPS_COLUMN = "n_mdps"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", type=Path, help="the grid configuration (or a shipped name)")
    parser.add_argument("--out", type=Path, required=True, help="folder for NAME.json and NAME-rows.csv")
    parser.add_argument("--name", default="reference", help="the calibration's name (default reference)")
    parser.add_argument("--mdps", type=int, default=10, help="test MDPs per cell, at least (default 10)")
    parser.add_argument("--max-mdps", type=int, default=4000, help="test MDPs per cell, at most (default 4000)")
    parser.add_argument("--batch-ms", type=float, default=40.0, help="CPU time of a cell's batch, ms (default 40)")
    parser.add_argument("--rounds", type=int, default=21, help="rounds (default 21)")
    parser.add_argument("--recount", type=Path, help="a calibration whose rows' CPU times to keep (see above)")
    args = parser.parse_args()
    if args.mdps < 1 or args.rounds < 1 or args.max_mdps < args.mdps or not args.batch_ms >= 0:
        parser.error("--mdps and --rounds must be >= 1, --max-mdps >= --mdps and --batch-ms >= 0")

    config = load_config(config_path(args.config))
    cells = [c for c in config.cells if c.runnable]
    if args.recount is not None:
        return recount(args, config, cells)
    loads = [os.getloadavg()[0]]
    print(host_line(), flush=True)
    started = time.perf_counter()
    trained: dict[str, Any] = {}
    learns: dict[str, bool] = {}
    offline_cpu: dict[str, list[float]] = {c.id: [] for c in cells}
    offline_work: dict[str, np.ndarray] = {}
    batch: dict[str, int] = {}
    online_cpu: dict[str, list[float]] = {c.id: [] for c in cells}
    online_work: dict[str, np.ndarray] = {}

    def train(cell: Any) -> None:
        e = cell.experiment
        agent = cell.spec.train(e.prior_fdm, e.gamma, e.horizon, e.seed)
        work = np.asarray(agent.offline_work if agent.offline_work is not None else [0] * len(WORK_UNITS), float)
        learns[cell.id] = bool(work.sum() > 0)
        offline_work[cell.id] = work
        offline_cpu[cell.id].append(float(agent.offline_cpu_seconds))
        trained[cell.id] = agent

    def run(cell: Any, n_mdps: int) -> Any:
        e = cell.experiment
        experiment = Experiment(e.test_fdm, n_mdps=n_mdps, gamma=e.gamma, horizon=e.horizon, seed=e.seed)
        return experiment.run(trained[cell.id], threads=1)

    # The sizing pass (also the warm-up: its times are not kept, but its training is one round's).
    for cell in cells:
        train(cell)
        per_trajectory = float(np.mean(run(cell, args.mdps).online_cpu_seconds))
        wanted = math.ceil(args.batch_ms / 1000.0 / max(per_trajectory, 1e-9))
        batch[cell.id] = min(args.max_mdps, max(args.mdps, wanted))
    trajectories = sum(batch.values())
    print(f"sized: {trajectories} trajectories per round; {time.perf_counter() - started:.0f} s", flush=True)
    loads.append(os.getloadavg()[0])
    for round_index in range(args.rounds):
        # A different order each round: a cell does not always run beside the same load.
        order = np.random.default_rng(round_index).permutation(len(cells))
        for i in order:
            cell = cells[i]
            if learns[cell.id] and round_index > 0:
                train(cell)
            result = run(cell, batch[cell.id])
            online_cpu[cell.id].append(float(np.sum(result.online_cpu_seconds)) / batch[cell.id])
            online_work[cell.id] = np.asarray(result.online_work, dtype=float).mean(axis=0)
        loads.append(os.getloadavg()[0])
        print(f"round {round_index + 1} of {args.rounds}: {time.perf_counter() - started:.0f} s", flush=True)

    # How far the rounds of one batch lie apart (median absolute deviation from their median,
    # relative): the measurement's own noise, a floor under the fit's errors.
    spread = np.array([np.median(np.abs(np.array(t) / np.median(t) - 1.0)) for t in online_cpu.values()])
    print(
        f"rounds of a batch apart by {100 * np.median(spread):.1f}% (median over cells; 90th percentile "
        f"{100 * np.quantile(spread, 0.9):.1f}%, largest {100 * spread.max():.1f}%)",
        flush=True,
    )
    rows = []
    for cell in cells:
        cpu = float(np.median(online_cpu[cell.id]))
        rows.append((cell.algorithm, cell.id, "online", cpu, *online_work[cell.id].tolist(), batch[cell.id]))
        if learns[cell.id]:
            cpu = float(np.median(offline_cpu[cell.id]))
            if cpu > 0:
                rows.append((cell.algorithm, cell.id, "offline", cpu, *offline_work[cell.id].tolist(), 0))
    frame = pl.DataFrame(rows, schema=[*ROW_COLUMNS, *WORK_UNITS, MDPS_COLUMN], orient="row")

    host = describe_host()
    machine = (
        f"{host['cpu_model']}, {host['logical_cores']} logical CPUs, vector extensions "
        f"{' '.join(host['vector_extensions'])}, solvers on the {host['vector_path']} path, "
        f"load average {min(loads):.1f} to {max(loads):.1f}"
    )
    source = (
        f"{config.path.name if config.path else args.config}: {len(cells)} cells, batches of their first "
        f"{args.mdps} to {args.max_mdps} test MDPs of about {args.batch_ms:g} ms, {args.rounds} rounds "
        f"(benches/calibrate.py)"
    )
    date = datetime.now(timezone.utc).date().isoformat()
    calibration = fit_rows(frame, args.name, source=source, machine=machine, date=date)
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / f"{args.name}-rows.csv", frame.write_csv(float_precision=None).encode())
    calibration.save(args.out / f"{args.name}.json")
    with pl.Config(tbl_rows=100, tbl_width_chars=200, fmt_str_lengths=60):
        print(calibration.fit_table().drop("rms_relative_error"))
    print(f"{machine}; {time.perf_counter() - started:.0f} s; written to {args.out}")
    return 0


def recount(args: argparse.Namespace, config: Any, cells: list[Any]) -> int:
    """Refits the calibration ``args.recount`` on its own CPU times and this build's work counts."""
    rows_path = args.recount.with_name(f"{args.recount.stem}-rows.csv")
    for path, what in ((args.recount, "calibration"), (rows_path, "rows of that calibration")):
        if not path.is_file():
            raise SystemExit(f"--recount: no {what} at {path} (a calibration NAME.json and NAME-rows.csv beside it)")
    try:
        old = load_calibration(args.recount)
        old_rows = read_table(rows_path, "calibration rows")
    except (OSError, ValueError) as error:
        raise SystemExit(f"--recount: {error}") from None
    missing = [c for c in ROW_COLUMNS if c not in old_rows.columns]
    if missing:
        raise SystemExit(f"--recount: {rows_path} lacks the columns {missing}")
    by_id = {c.id: c for c in cells}
    unknown = sorted(set(old_rows[Col.CELL_ID]) - set(by_id))
    if unknown:
        raise SystemExit(f"{rows_path}: cells not in {args.config}: {unknown[:3]}")
    # Each row's work on the test MDPs its time was measured on (rows written before the batches
    # were recorded: --mdps).
    online_rows = old_rows.filter(pl.col("part") == "online")
    sizes = (
        dict(zip(online_rows[Col.CELL_ID], online_rows[MDPS_COLUMN], strict=True))
        if MDPS_COLUMN in old_rows.columns
        else {}
    )
    batch = {cell_id: int(sizes.get(cell_id) or args.mdps) for cell_id in old_rows[Col.CELL_ID]}
    started = time.perf_counter()
    online: dict[str, np.ndarray] = {}
    offline: dict[str, np.ndarray] = {}
    for cell_id in dict.fromkeys(old_rows[Col.CELL_ID].to_list()):
        e = by_id[cell_id].experiment
        agent = by_id[cell_id].spec.train(e.prior_fdm, e.gamma, e.horizon, e.seed)
        work = agent.offline_work if agent.offline_work is not None else [0] * len(WORK_UNITS)
        offline[cell_id] = np.asarray(work, dtype=float)
        experiment = Experiment(e.test_fdm, n_mdps=batch[cell_id], gamma=e.gamma, horizon=e.horizon, seed=e.seed)
        online[cell_id] = np.asarray(experiment.run(agent, threads=1).online_work, dtype=float).mean(axis=0)
    rows = [
        (
            r[Col.ALGORITHM],
            r[Col.CELL_ID],
            r["part"],
            r["cpu_seconds"],
            *(online if r["part"] == "online" else offline)[r[Col.CELL_ID]].tolist(),
            batch[r[Col.CELL_ID]] if r["part"] == "online" else 0,
        )
        for r in old_rows.iter_rows(named=True)
    ]
    frame = pl.DataFrame(rows, schema=[*ROW_COLUMNS, *WORK_UNITS, MDPS_COLUMN], orient="row")
    source = (
        old.source.split("; work recounted")[0]
        + f"; work recounted with bbrl {bbrl.__version__} ({len(WORK_UNITS)} units)"
    )
    calibration = fit_rows(frame, args.name, source=source, machine=old.machine, date=old.date)
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / f"{args.name}-rows.csv", frame.write_csv(float_precision=None).encode())
    calibration.save(args.out / f"{args.name}.json")
    with pl.Config(tbl_rows=100, tbl_width_chars=200, fmt_str_lengths=60):
        print(calibration.fit_table().drop("rms_relative_error"))
    print(f"work of {len(online)} cells recounted in {time.perf_counter() - started:.0f} s; written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
