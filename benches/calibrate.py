"""Fits a calibration (seconds per work unit) on a grid's cells, measured so that the load of a
shared machine moves it as little as it can: the shipped one is made with this.

Each cell of the grid is trained once (cells that learn offline: once per round, their training
measured each time) and run on its first ``--mdps`` test MDPs (whole trajectories, one thread),
``--rounds`` times, the cells in a different order each round. The work of a trajectory is the
same in every round (the same seeded computation); its CPU time is not, so a trajectory's cost is
the median of its rounds (a trajectory preempted, or slowed by a neighbour, in one round does not
count), and a cell's online cost is the mean of its trajectories' costs. Training takes the median
of its rounds too. The rows (:func:`bbrl.analysis.cost.calibration_rows`' columns) are written to
``OUT/NAME-rows.csv`` and the calibration fitted on them to ``OUT/NAME.json``.

    python benches/calibrate.py quick.toml --out python/bbrl/data/calibrations --name reference

The machine (CPU, vector extensions, cores) and the load average before and after are recorded
in the calibration.

``--recount CALIBRATION.json`` measures no time: it keeps the CPU times of that calibration's rows
(``NAME-rows.csv`` beside it) and its machine and date, counts each cell's work again with this
build (one round: the counts of a seeded run are the same in every round) and refits. This is how a
calibration measured on an idle machine follows a change of the work units without being measured
again on a busy one.
"""

from __future__ import annotations

import argparse
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
from bbrl.fileio import write_atomic
from bbrl.grid import config_path, load_config
from bbrl.protocol.schema import WORK_UNITS, Col, describe_host, host_line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", type=Path, help="the grid configuration (or a shipped name)")
    parser.add_argument("--out", type=Path, required=True, help="folder for NAME.json and NAME-rows.csv")
    parser.add_argument("--name", default="reference", help="the calibration's name (default reference)")
    parser.add_argument("--mdps", type=int, default=10, help="test MDPs per cell and round (default 10)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--recount", type=Path, help="a calibration whose rows' CPU times to keep (see above)")
    args = parser.parse_args()
    if args.mdps < 1 or args.rounds < 1:
        parser.error("--mdps and --rounds must be >= 1")

    config = load_config(config_path(args.config))
    cells = [c for c in config.cells if c.runnable]
    if args.recount is not None:
        return recount(args, config, cells)
    loads = [os.getloadavg()[0]]
    print(host_line(), flush=True)
    started = time.perf_counter()
    trained: dict[str, object] = {}
    online_cpu: dict[str, list[np.ndarray]] = {c.id: [] for c in cells}
    online_work: dict[str, np.ndarray] = {}
    offline_cpu: dict[str, list[float]] = {c.id: [] for c in cells}
    offline_work: dict[str, np.ndarray] = {}
    for round_index in range(args.rounds):
        # A different order each round: a cell does not always run beside the same load.
        order = np.random.default_rng(round_index).permutation(len(cells))
        for i in order:
            cell = cells[i]
            e = cell.experiment
            learns = cell.id not in offline_work or offline_work[cell.id].sum() > 0
            if cell.id not in trained or learns:
                agent = cell.spec.train(e.prior_fdm, e.gamma, e.horizon, e.seed)
                work = np.asarray(agent.offline_work if agent.offline_work is not None else [0] * len(WORK_UNITS))
                offline_work[cell.id] = work.astype(float)
                offline_cpu[cell.id].append(float(agent.offline_cpu_seconds))
                trained[cell.id] = agent
            experiment = Experiment(e.test_fdm, n_mdps=args.mdps, gamma=e.gamma, horizon=e.horizon, seed=e.seed)
            run = experiment.run(trained[cell.id], threads=1)
            online_cpu[cell.id].append(np.asarray(run.online_cpu_seconds, dtype=float))
            online_work[cell.id] = np.asarray(run.online_work, dtype=float)
        loads.append(os.getloadavg()[0])
        print(f"round {round_index + 1} of {args.rounds}: {time.perf_counter() - started:.0f} s", flush=True)

    rows = []
    for cell in cells:
        per_trajectory = np.median(np.vstack(online_cpu[cell.id]), axis=0)
        work = online_work[cell.id].mean(axis=0)
        rows.append((cell.algorithm, cell.id, "online", float(per_trajectory.mean()), *work.tolist()))
        if offline_work[cell.id].sum() > 0 and offline_cpu[cell.id]:
            cpu = float(np.median(offline_cpu[cell.id]))
            if cpu > 0:
                rows.append((cell.algorithm, cell.id, "offline", cpu, *offline_work[cell.id].tolist()))
    frame = pl.DataFrame(rows, schema=[*ROW_COLUMNS, *WORK_UNITS], orient="row")

    host = describe_host()
    machine = (
        f"{host['cpu_model']}, {host['logical_cores']} logical CPUs, vector extensions "
        f"{' '.join(host['vector_extensions'])}, solvers on the {host['vector_path']} path, "
        f"load average {min(loads):.1f} to {max(loads):.1f}"
    )
    source = (
        f"{config.path.name if config.path else args.config}: {len(cells)} cells, their first {args.mdps} test MDPs, "
        f"{args.rounds} rounds (benches/calibrate.py)"
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
    old = load_calibration(args.recount)
    rows_path = args.recount.with_name(f"{args.recount.stem}-rows.csv")
    old_rows = pl.read_csv(rows_path)
    by_id = {c.id: c for c in cells}
    unknown = sorted(set(old_rows[Col.CELL_ID]) - set(by_id))
    if unknown:
        raise SystemExit(f"{rows_path}: cells not in {args.config}: {unknown[:3]}")
    started = time.perf_counter()
    online: dict[str, np.ndarray] = {}
    offline: dict[str, np.ndarray] = {}
    for cell_id in dict.fromkeys(old_rows[Col.CELL_ID].to_list()):
        e = by_id[cell_id].experiment
        agent = by_id[cell_id].spec.train(e.prior_fdm, e.gamma, e.horizon, e.seed)
        work = agent.offline_work if agent.offline_work is not None else [0] * len(WORK_UNITS)
        offline[cell_id] = np.asarray(work, dtype=float)
        experiment = Experiment(e.test_fdm, n_mdps=args.mdps, gamma=e.gamma, horizon=e.horizon, seed=e.seed)
        online[cell_id] = np.asarray(experiment.run(agent, threads=1).online_work, dtype=float).mean(axis=0)
    rows = [
        (
            r[Col.ALGORITHM],
            r[Col.CELL_ID],
            r["part"],
            r["cpu_seconds"],
            *(online if r["part"] == "online" else offline)[r[Col.CELL_ID]].tolist(),
        )
        for r in old_rows.iter_rows(named=True)
    ]
    frame = pl.DataFrame(rows, schema=[*ROW_COLUMNS, *WORK_UNITS], orient="row")
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
