"""The cost model of the budget maps: work counted in machine-independent units, turned into
seconds by a calibration.

Every trajectory and every offline training records its work (:data:`bbrl.protocol.schema.WORK_UNITS`:
value-iteration rows and entries times sweeps, tree nodes and edges, simulated steps, Gamma
variates, formula tokens, decisions, calls into Python agents). The counts depend only on the
seeded computation, so the same grid gives the same counts on every run, at every thread count
and on every CPU. A **calibration** gives the seconds one unit costs on one machine; the cost of a
cell is its counts times those seconds, so a map drawn from costs is the same bit for bit for one
calibration, and the same results can be redrawn for another machine's calibration.

A calibration is fitted on a grid's own cells (:func:`fit_calibration`): a least-squares fit of
the measured CPU seconds on the counts, with non-negative seconds per unit (``scipy.optimize.nnls``)
and relative errors (each cell weighs by its own time, so microsecond agents count as much as
hour-long ones), once per algorithm (a unit costs more in one algorithm's inner loop than in
another's: SBOSS's merged solve is not BEB's) and once over every cell (the seconds per unit for
an algorithm the calibration has not seen). Its fit per algorithm (R², largest and
root-mean-square relative error) is kept in the calibration, and an algorithm's root-mean-square
relative error is the uncertainty the map gives its costs (a map cell whose answer depends on which
side of a bound a cost falls within it is marked as a boundary). Calibrations are small JSON files
(:meth:`Calibration.save`, written atomically); the package ships one for a named reference machine
(:func:`reference_calibration`), the default of ``bbrl report``. A calibration records the digest of
the rows it was fitted on (:func:`rows_digest`), so that a report redrawn from the same cells reuses
its folder's fit (:func:`cached_fit`) instead of importing scipy and fitting again.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ..fileio import check_kind, json_field, read_json_document, write_atomic
from ..protocol.schema import WORK_UNITS, Col, host_line, work_array

__all__ = [
    "CALIBRATION_FORMAT",
    "REFERENCE",
    "SIZE_UNITS",
    "Calibration",
    "CellCosts",
    "cached_fit",
    "calibration_rows",
    "cell_costs",
    "fit_calibration",
    "fit_rows",
    "fit_verdict",
    "load_calibration",
    "reference_calibration",
    "reference_rows",
    "rows_digest",
]

#: The format name of a calibration file.
CALIBRATION_FORMAT = "bbrl-calibration"
#: The name of the calibration the package ships (``bbrl report --machine reference``).
REFERENCE = "reference"
#: The units that scale another unit by the model's size (its number of states or actions; the
#: core names them ``<unit>_by_states`` and ``<unit>_by_actions``). They explain why the same count
#: costs more on a larger model, but with a calibration's few problem shapes each one can also fit
#: noise: an algorithm's fit takes those of them, among the ones its rows count, that lower its
#: leave-one-out error (:func:`fit_rows`).
SIZE_UNITS = tuple(u for u in WORK_UNITS if u.endswith(("_by_states", "_by_actions")))
_SIZE_COLUMNS = [WORK_UNITS.index(u) for u in SIZE_UNITS]
_BASE_COLUMNS = [j for j, u in enumerate(WORK_UNITS) if u not in SIZE_UNITS]
#: The smallest relative uncertainty a cost is given: below it, the fit's own rounding.
_MIN_UNCERTAINTY = 0.01
#: The bounds a fit meets per algorithm (:func:`fit_verdict`): the median and the largest relative
#: error |predicted / measured - 1| over its rows, and R² where the costs span R2_SPAN times or more.
MEDIAN_ERROR_BOUND = 0.10
MAX_ERROR_BOUND = 0.35
R2_BOUND = 0.9
R2_SPAN = 10.0


@dataclass(frozen=True)
class Calibration:
    """Seconds per work unit on one machine, with the quality of the fit they came from.

    Attributes:
        name: what the calibration is called in reports (``reference``, a results folder, ...).
        machine: the machine it was measured on (CPU model, vector extensions, cores, load).
        seconds_per_unit: CPU seconds one unit costs, per unit of :data:`WORK_UNITS` (>= 0), fitted
            over every cell: for algorithms without their own.
        per_algorithm: per algorithm, its own seconds per unit (fitted on its cells).
        fit: per algorithm, the fit on its cells: ``cells`` (online and offline rows), ``r2``
            (R² of the predicted against the measured CPU seconds; NaN with fewer than 2 rows or
            no spread), ``max_relative_error`` and ``rms_relative_error`` (|predicted / measured - 1|);
            the key ``"all"`` holds the whole fit.
        source: what it was fitted on (a folder, a grid).
        date: the day the cells it was fitted on were run (ISO 8601, ``YYYY-MM-DD``; "" unknown).
        rows_digest: :func:`rows_digest` of the rows it was fitted on ("" unknown: the shipped
            calibration, files of an older bbrl).
    """

    name: str
    machine: str
    seconds_per_unit: dict[str, float]
    fit: dict[str, dict[str, float]] = field(default_factory=dict)
    source: str = ""
    per_algorithm: dict[str, dict[str, float]] = field(default_factory=dict)
    date: str = ""
    rows_digest: str = ""

    def describe(self) -> str:
        """Where and when the calibration was measured, as one phrase."""
        return f"measured {'on ' + self.date + ' ' if self.date else ''}on {self.machine or 'an unknown machine'}"

    def unit_seconds(self, algorithm: str | None = None) -> np.ndarray:
        """The seconds per unit of ``algorithm`` (its own if fitted, else the whole fit's) in the
        order of :data:`WORK_UNITS` (a unit it lacks costs 0)."""
        table = self.per_algorithm.get(algorithm, self.seconds_per_unit) if algorithm else self.seconds_per_unit
        return np.array([float(table.get(u, 0.0)) for u in WORK_UNITS])

    def uncertainty(self, algorithm: str) -> float:
        """The relative uncertainty of an algorithm's costs: its fit's RMS relative error (the
        whole fit's for an algorithm the calibration has not seen), at least 1%."""
        stats = self.fit.get(algorithm) or self.fit.get("all") or {}
        value = float(stats.get("rms_relative_error", 0.0))
        return max(_MIN_UNCERTAINTY, value if math.isfinite(value) else 0.0)

    def to_document(self) -> dict[str, Any]:
        return {
            "format": CALIBRATION_FORMAT,
            "version": 1,
            "name": self.name,
            "machine": self.machine,
            "source": self.source,
            "date": self.date,
            "seconds_per_unit": {u: self.seconds_per_unit.get(u, 0.0) for u in WORK_UNITS},
            "per_algorithm": {a: {u: t.get(u, 0.0) for u in WORK_UNITS} for a, t in self.per_algorithm.items()},
            "fit": self.fit,
            "rows_sha256": self.rows_digest,
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Writes the calibration as JSON, atomically; returns the path."""
        return write_atomic(Path(path), (json.dumps(self.to_document(), indent=1, allow_nan=True) + "\n").encode())

    def fit_table(self) -> pl.DataFrame:
        """The fit per algorithm as a table (``algorithm``, ``cells``, ``r2``,
        ``max_relative_error``, ``rms_relative_error``, ``median_relative_error``, ``cost_span``
        (largest over smallest measured cost), ``verdict`` (:func:`fit_verdict`)), the whole fit
        last. Statistics a calibration written by an older bbrl lacks are NaN."""
        names = [k for k in self.fit if k != "all"] + (["all"] if "all" in self.fit else [])
        stats = ("r2", "max_relative_error", "rms_relative_error", "median_relative_error", "cost_span")
        return pl.DataFrame(
            {
                Col.ALGORITHM: names,
                "cells": [int(self.fit[k].get("cells", 0)) for k in names],
                **{stat: [float(self.fit[k].get(stat, math.nan)) for k in names] for stat in stats},
                "verdict": [fit_verdict(self.fit[k]) for k in names],
            }
        )


def load_calibration(path: str | os.PathLike[str]) -> Calibration:
    """Reads a calibration file (or, for ``"reference"``, the shipped one).

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a calibration file, or a unit cost that is not a number >= 0.
    """
    if str(path) == REFERENCE:
        return reference_calibration()
    return _from_document(read_json_document(path, "calibration"), f"calibration {str(path)!r}")


def reference_calibration() -> Calibration:
    """The calibration the package ships: the reference machine the docs' maps are drawn for."""
    text = (resources.files("bbrl") / "data" / "calibrations" / "reference.json").read_text(encoding="utf-8")
    return _from_document(json.loads(text), "the shipped reference calibration")


def reference_rows() -> pl.DataFrame:
    """The rows the shipped calibration was fitted on (:func:`calibration_rows` of the cells it
    names in its ``source``), shipped beside it so that its fit can be checked and redone."""
    from ..fileio import read_table

    with resources.as_file(resources.files("bbrl") / "data" / "calibrations" / "reference-rows.csv") as path:
        return read_table(path, "calibration rows")


def _from_document(document: Any, source: str) -> Calibration:
    if not isinstance(document, dict) or document.get("format") != CALIBRATION_FORMAT:
        raise ValueError(f"{source}: not a bbrl calibration file (format {CALIBRATION_FORMAT})")
    costs = _unit_table(document.get("seconds_per_unit"), source, "seconds_per_unit")
    per_algorithm = document.get("per_algorithm", {})
    if not isinstance(per_algorithm, dict):
        raise ValueError(f"{source}: per_algorithm must be a table of algorithm: (unit: seconds)")
    return Calibration(
        name=str(document.get("name", source)),
        machine=str(document.get("machine", "")),
        seconds_per_unit=costs,
        fit={str(k): _fit_row(v, source, k) for k, v in json_field(document, "fit", "an object", source, {}).items()},
        source=str(document.get("source", "")),
        per_algorithm={str(a): _unit_table(t, source, f"per_algorithm[{a!r}]") for a, t in per_algorithm.items()},
        date=str(json_field(document, "date", "a string", source, "")),
        rows_digest=str(json_field(document, "rows_sha256", "a string", source, "")),
    )


def _fit_row(row: Any, source: str, unit: str) -> dict[str, float]:
    """One unit's fit statistics (name: number), or a ValueError naming the file and the entry."""
    where = f"{source}: fit[{unit!r}]"
    return {
        str(a): float(check_kind(b, "a number", f"{where}[{a!r}]"))
        for a, b in check_kind(row, "an object", where).items()
    }


def _unit_table(table: Any, source: str, what: str) -> dict[str, float]:
    """A table of unit: seconds >= 0, or a ValueError naming the file and the bad entry."""
    if not isinstance(table, dict):
        raise ValueError(f"{source}: {what} must be a table of unit: seconds")
    for unit, value in table.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0.0:
            raise ValueError(f"{source}: {what}[{unit!r}] must be a number >= 0, got {value!r}")
    return {str(k): float(v) for k, v in table.items()}


def _work_rows(cells: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(online work per trajectory, offline work), (cells, units) each; NaN rows where unknown."""
    online = work_array(cells[Col.ONLINE_WORK_PER_TRAJECTORY]) if cells.height else np.zeros((0, len(WORK_UNITS)))
    offline = work_array(cells[Col.OFFLINE_WORK]) if cells.height else np.zeros((0, len(WORK_UNITS)))
    return online, offline


#: The columns of a calibration's rows (:func:`calibration_rows`) before the work units.
ROW_COLUMNS = (Col.ALGORITHM, Col.CELL_ID, "part", "cpu_seconds")


def calibration_rows(cells: pl.DataFrame) -> pl.DataFrame:
    """The rows a calibration is fitted on, from the cells of a grid (``cells`` of
    :func:`bbrl.protocol.results.load`): per cell, its mean online CPU seconds per trajectory
    against its mean work per trajectory (``part`` = ``"online"``), and, for cells that learn
    offline (offline work and CPU time above 0), its offline CPU seconds against its offline work
    (``"offline"``). Columns: :data:`ROW_COLUMNS` then one per unit of :data:`WORK_UNITS`. Cells
    without CPU times or work counts are left out."""
    online_work, offline_work = _work_rows(cells)
    online_cpu = cells[Col.ONLINE_CPU_SECONDS_PER_TRAJECTORY].cast(pl.Float64).fill_null(np.nan).to_numpy()
    offline_cpu = cells[Col.OFFLINE_CPU_SECONDS].cast(pl.Float64).fill_null(np.nan).to_numpy()
    algorithms = cells[Col.ALGORITHM].to_list()
    ids = cells[Col.CELL_ID].to_list() if Col.CELL_ID in cells.columns else [""] * cells.height
    rows: list[tuple[Any, ...]] = []
    for i in range(cells.height):
        if np.isfinite(online_work[i]).all() and np.isfinite(online_cpu[i]) and online_cpu[i] > 0.0:
            rows.append((algorithms[i], ids[i], "online", float(online_cpu[i]), *online_work[i].tolist()))
        learned = offline_work[i]
        if np.isfinite(learned).all() and learned.sum() > 0 and np.isfinite(offline_cpu[i]) and offline_cpu[i] > 0:
            rows.append((algorithms[i], ids[i], "offline", float(offline_cpu[i]), *learned.tolist()))
    schema = {
        **{c: pl.String for c in ROW_COLUMNS if c != "cpu_seconds"},
        "cpu_seconds": pl.Float64,
        **{u: pl.Float64 for u in WORK_UNITS},
    }
    return pl.DataFrame(rows, schema=[*ROW_COLUMNS, *WORK_UNITS], orient="row").cast(schema)  # type: ignore[arg-type]


def fit_calibration(
    cells: pl.DataFrame, name: str, source: str = "", machine: str | None = None, date: str | None = None
) -> Calibration:
    """Fits seconds per unit on the cells of a grid (``cells`` of :func:`bbrl.protocol.results.load`),
    on their :func:`calibration_rows` (see :func:`fit_rows`); ``date``: the day the cells were run
    (default: today, UTC).

    Raises:
        ValueError: no cell has both work counts and CPU times.
    """
    machine = machine if machine is not None else _machine_of(cells)
    return fit_rows(calibration_rows(cells), name, source, machine, date)


def cached_fit(cells: pl.DataFrame, name: str, source: str, path: str | os.PathLike[str]) -> Calibration:
    """:func:`fit_calibration` of ``cells``, reusing the calibration saved at ``path`` when it was
    fitted on the same rows (:func:`rows_digest`) with the same name, source and machine; else
    fitted and saved there. The fit is deterministic, so the reused one has the same numbers; only
    its ``date`` is the first fit's. A file that is missing, damaged or of an older bbrl is fitted
    again and replaced.

    Raises:
        ValueError: no cell has both work counts and CPU times.
    """
    rows = calibration_rows(cells)
    machine = _machine_of(cells)
    try:
        saved = load_calibration(path) if Path(path).is_file() else None
    except (OSError, ValueError):
        saved = None
    wanted = (rows_digest(rows), name, source, machine)
    if saved is not None and (saved.rows_digest, saved.name, saved.source, saved.machine) == wanted:
        return saved
    fitted = fit_rows(rows, name, source, machine)
    fitted.save(path)
    return fitted


def rows_digest(rows: pl.DataFrame) -> str:
    """SHA-256 (hex) of calibration rows (:func:`calibration_rows`): their owners, cells and parts,
    and the exact bits of their CPU seconds and work counts, in order; the same rows, the same fit."""
    digest = hashlib.sha256(b"bbrl-calibration-rows 1\n")
    for column in ROW_COLUMNS[:3]:
        digest.update("\x1f".join(map(str, rows[column].to_list())).encode() + b"\x1e")
    digest.update("\x1f".join(("cpu_seconds", *WORK_UNITS)).encode() + b"\x1e")
    numbers = rows.select("cpu_seconds", *WORK_UNITS).cast(pl.Float64).to_numpy()
    digest.update(np.ascontiguousarray(numbers, dtype="<f8").tobytes())
    return digest.hexdigest()


def fit_rows(
    rows: pl.DataFrame, name: str, source: str = "", machine: str = "", date: str | None = None
) -> Calibration:
    """Fits seconds per unit on calibration rows (:func:`calibration_rows`, or a file of them).

    The fit minimises the sum of squared *relative* errors with non-negative seconds per unit, once
    per algorithm (its own rows) and once over every row (the seconds of an algorithm the
    calibration has not seen).

    Raises:
        ValueError: no rows, or rows without the columns of :func:`calibration_rows`.
    """
    missing = [c for c in (*ROW_COLUMNS, *WORK_UNITS) if c not in rows.columns]
    if missing:
        raise ValueError(f"calibration rows lack the columns {missing}")
    if rows.height == 0:
        raise ValueError("no cell has both work counts and CPU times to fit a calibration on")
    x = rows.select(WORK_UNITS).cast(pl.Float64).to_numpy()
    y = rows["cpu_seconds"].cast(pl.Float64).to_numpy()
    if not (np.isfinite(x).all() and (x >= 0).all() and np.isfinite(y).all() and (y > 0).all()):
        raise ValueError("calibration rows need finite work counts >= 0 and CPU seconds > 0")
    owners = rows[Col.ALGORITHM].to_list()
    seconds = _relative_nnls(x, y)
    per_algorithm, predicted = {}, np.empty_like(y)
    masks = {a: np.array([o == a for o in owners]) for a in dict.fromkeys(owners)}
    for algorithm, mask in masks.items():
        own = _selected_fit(x[mask], y[mask])
        per_algorithm[algorithm] = {u: float(s) for u, s in zip(WORK_UNITS, own, strict=True)}
        predicted[mask] = x[mask] @ own
    fit = {"all": _fit_stats(y, predicted)}
    for algorithm, mask in masks.items():
        fit[algorithm] = _fit_stats(y[mask], predicted[mask])
    return Calibration(
        name=name,
        machine=machine,
        seconds_per_unit={u: float(s) for u, s in zip(WORK_UNITS, seconds, strict=True)},
        fit=fit,
        source=source,
        per_algorithm=per_algorithm,
        date=date if date is not None else datetime.now(timezone.utc).date().isoformat(),
        rows_digest=rows_digest(rows),
    )


def _selected_fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Seconds per unit for one algorithm's rows: every unit but the :data:`SIZE_UNITS`, plus
    the subset of the size units its rows count that gives the smallest leave-one-out RMS relative
    error (a larger subset only where it is strictly smaller; none with fewer than three rows)."""
    size = [j for j in _SIZE_COLUMNS if (x[:, j] > 0).any()]
    base = _BASE_COLUMNS
    best, best_error = base, math.inf
    if len(y) >= 3:
        subsets = [[j for k, j in enumerate(size) if mask >> k & 1] for mask in range(1 << len(size))]
        for subset in sorted(subsets, key=len):
            error = _leave_one_out_error(x[:, base + subset], y)
            if error < best_error:
                best, best_error = base + subset, error
    seconds = np.zeros(x.shape[1])
    seconds[best] = _relative_nnls(x[:, best], y)
    return seconds


def _leave_one_out_error(x: np.ndarray, y: np.ndarray) -> float:
    """RMS relative error of each row's prediction by the fit of the other rows."""
    keep = np.ones(len(y), dtype=bool)
    errors = np.empty(len(y))
    for i in range(len(y)):
        keep[i] = False
        errors[i] = x[i] @ _relative_nnls(x[keep], y[keep]) / y[i] - 1.0
        keep[i] = True
    return float(np.sqrt(np.mean(errors**2)))


def _relative_nnls(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative seconds per unit minimising the squared relative errors of ``x @ s`` against ``y``."""
    from scipy.optimize import nnls

    # Each row divided by its own time: the target is then 1 everywhere. Columns scaled to at most
    # 1 for the solver's conditioning; units no row uses cost 0.
    scale = x.max(axis=0)
    scale[scale == 0.0] = 1.0
    solution, _ = nnls((x / scale) / y[:, None], np.ones(len(y)), maxiter=50 * x.shape[1])
    return solution / scale


def _fit_stats(measured: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    relative = np.abs(predicted / measured - 1.0)
    spread = float(((measured - measured.mean()) ** 2).sum())
    r2 = 1.0 - float(((measured - predicted) ** 2).sum()) / spread if measured.size >= 2 and spread > 0 else math.nan
    return {
        "cells": float(measured.size),
        "r2": r2,
        "max_relative_error": float(relative.max()),
        "rms_relative_error": float(math.sqrt(float((relative**2).mean()))),
        "median_relative_error": float(np.median(relative)),
        "cost_span": float(measured.max() / measured.min()),
    }


def fit_verdict(stats: dict[str, float]) -> str:
    """Whether one algorithm's fit meets the cost model's bounds: ``"meets"``, or ``"fails: "``
    and the bounds it misses (median relative error <= :data:`MEDIAN_ERROR_BOUND`, largest <=
    :data:`MAX_ERROR_BOUND`, and R² >= :data:`R2_BOUND` where its costs span :data:`R2_SPAN`
    times or more; R² says little about costs of one size)."""
    missed = []
    median = stats.get("median_relative_error", math.nan)
    largest = stats.get("max_relative_error", math.nan)
    if not median <= MEDIAN_ERROR_BOUND:
        missed.append(f"median {100 * median:.0f}% > {100 * MEDIAN_ERROR_BOUND:.0f}%")
    if not largest <= MAX_ERROR_BOUND:
        missed.append(f"largest {100 * largest:.0f}% > {100 * MAX_ERROR_BOUND:.0f}%")
    r2 = stats.get("r2", math.nan)
    if stats.get("cost_span", 0.0) >= R2_SPAN and not r2 >= R2_BOUND:
        missed.append(f"R² {r2:.2f} < {R2_BOUND:g} over a {R2_SPAN:g}x span")
    return "meets" if not missed else "fails: " + ", ".join(missed)


def _machine_of(cells: pl.DataFrame) -> str:
    """The machine the cells were measured on, as one line (the first cell's host)."""
    if cells.height == 0 or Col.HOST_CPU not in cells.columns:
        return "unknown machine"
    row = cells.row(0, named=True)
    host = {
        "cpu_model": row.get(Col.HOST_CPU) or "unknown CPU",
        "logical_cores": row.get(Col.HOST_LOGICAL_CORES) or 0,
        "vector_extensions": str(row.get(Col.HOST_VECTOR_EXTENSIONS) or "").split(),
        "vector_path": "recorded",
        "load_average": float(cells[Col.HOST_LOAD_AVERAGE].drop_nulls().max() or math.nan),
    }
    return host_line(host).removeprefix("machine: ").replace("solvers on the recorded path, ", "")


@dataclass(frozen=True)
class CellCosts:
    """What the maps compare for each cell (arrays in the cells' order).

    Attributes:
        online: cost per trajectory, seconds.
        offline: offline cost, seconds (0 for agents that learn nothing offline).
        online_uncertainty, offline_uncertainty: relative uncertainty of each.
        basis: per cell, ``"work"`` (counts times the calibration) or ``"measured"`` (CPU time
            measured: results written before work was counted, or a Python agent's training).
    """

    online: np.ndarray
    offline: np.ndarray
    online_uncertainty: np.ndarray
    offline_uncertainty: np.ndarray
    basis: list[str]


def cell_costs(cells: pl.DataFrame, calibration: Calibration | None) -> CellCosts:
    """The costs of the cells under ``calibration`` (None: the measured times, as before work was
    counted). A cell without work counts keeps its measured time, with the 95% interval of its
    mean online time as the online uncertainty."""
    n = cells.height
    online_work, offline_work = _work_rows(cells)
    measured_online = cells[Col.ONLINE_TIME_PER_TRAJECTORY].cast(pl.Float64).to_numpy()
    measured_offline = cells[Col.OFFLINE_TIME].cast(pl.Float64).fill_null(0.0).to_numpy()
    halfwidth = cells[Col.ONLINE_CPU_CI95_PER_TRAJECTORY].cast(pl.Float64).fill_null(0.0).fill_nan(0.0).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        measured_u = np.where(measured_online > 0, halfwidth / measured_online, 0.0)
    online, offline = measured_online.copy(), measured_offline.copy()
    u_on, u_off = measured_u.copy(), np.zeros(n)
    basis = ["measured"] * n
    if calibration is not None:
        algorithms = cells[Col.ALGORITHM].to_list()
        for i in range(n):
            seconds = calibration.unit_seconds(algorithms[i])
            # A unit the cell's file lacks (results of an older bbrl) matters only if it is priced.
            priced = seconds > 0.0
            per_trajectory, priced_seconds = online_work[i][priced], seconds[priced]
            if not np.isfinite(per_trajectory).all():
                continue
            u = calibration.uncertainty(algorithms[i])
            online[i], u_on[i], basis[i] = float(per_trajectory @ priced_seconds), u, "work"
            trained = offline_work[i][priced]
            if np.isfinite(trained).all():
                offline[i], u_off[i] = float(trained @ priced_seconds), u
    return CellCosts(online, offline, u_on, u_off, basis)
