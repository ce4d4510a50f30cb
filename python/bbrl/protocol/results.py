"""A grid's results as data: the cell files of ``bbrl grid run`` read into polars frames."""

from __future__ import annotations

import json
import os
import weakref
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from ..fileio import check_kind, path_kind, read_json_document
from ..intervals import ci95_halfwidth
from .schema import CELL_COLUMNS as FILE_COLUMNS
from .schema import PER_MDP_COLUMNS, RACE_STOPPED_BY, REWARDS_COLUMN, SCHEMA, WORK_DTYPE, WORK_UNITS, Col, rewards_array

__all__ = [
    "CELL_COLUMNS",
    "EXPERIMENTS_FILE",
    "CellFileError",
    "Results",
    "check_cell_file",
    "check_results_folder",
    "from_frames",
    "load",
    "read_cell_file",
    "read_experiments",
    "returns_matrix",
    "rewards_matrix",
]

#: Columns that are constant within a cell file (everything but the per-MDP ones): a cells frame
#: has them once per cell, beside the per-MDP columns' summaries (a cell's first MDP's CPU time was
#: kept there as if it were the cell's).
CELL_COLUMNS = tuple(c for c in FILE_COLUMNS if c not in PER_MDP_COLUMNS)


#: Columns every cell file has (the schema is :mod:`bbrl.protocol.schema`).
REQUIRED_COLUMNS = (Col.CELL_ID, Col.MDP, Col.RETURN, Col.ONLINE_SECONDS)


#: What polars raises for a damaged Parquet file: one of several error types, or, for some
#: damage (row groups whose lengths disagree), a Rust panic, which is not an ``Exception``.
PARQUET_ERRORS = (Exception, pl.exceptions.PanicException)
#: The column a scan of many cell files adds to name each row's file (no cell column has it).
SOURCE_FILE_COLUMN = "__bbrl_source_file__"


class CellFileError(ValueError):
    """A cell file that cannot be read back whole; the message names the file."""


def check_cell_file(path: Path, n_mdps: int | None = None) -> int:
    """The number of rows of a cell file, after checking that it reads back whole.

    Reads the Parquet footer and the required columns (a truncated file fails either), and, with
    ``n_mdps``, that there is one row per test MDP.

    Raises:
        CellFileError: naming the file and what is wrong with it.
    """
    try:
        frame = pl.read_parquet(path, columns=list(REQUIRED_COLUMNS))
    except PARQUET_ERRORS as exc:
        raise _damaged(path, exc) from None
    problem = schema_problem(frame) if frame.height else None  # an empty file is short: said below
    if problem:
        raise CellFileError(f"cell file {str(path)!r}: {problem}; run `bbrl grid run` again to redo it")
    if n_mdps is not None and frame.height != n_mdps and not _stopped_by_race(path, frame.height, n_mdps):
        raise CellFileError(
            f"cell file {str(path)!r} has {frame.height} rows, expected one per test MDP ({n_mdps}); "
            "run `bbrl grid run` again to redo it"
        )
    return frame.height


def read_cell_file(path: Path) -> pl.DataFrame:
    """The whole frame of a cell file (or of a raced cell's batch), read once.

    Raises:
        CellFileError: naming the file, when it is missing, damaged or truncated, or lacks a
            required column.
    """
    try:
        frame = pl.read_parquet(path)
    except PARQUET_ERRORS as exc:
        raise _damaged(path, exc) from None
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise CellFileError(
            f"cell file {str(path)!r} lacks the columns {missing}; run `bbrl grid run` again to redo it"
        )
    problem = schema_problem(frame)
    if problem:
        raise CellFileError(f"cell file {str(path)!r}: {problem}; run `bbrl grid run` again to redo it")
    return frame


def schema_problem(frame: pl.DataFrame) -> str | None:
    """What makes a cell frame other than :data:`~bbrl.protocol.schema.SCHEMA` says (``None``: nothing):
    no rows, a column of another type (numbers of another width are the same type: files written
    by earlier versions), a required column with a missing value or a return that is NaN or
    infinite (its first row named)."""
    if frame.height == 0:
        return "it has no rows"
    for name, dtype in frame.schema.items():
        expected = SCHEMA.get(name)
        if expected is not None and not _same_type(dtype, expected):
            return f"column {name!r} is of type {dtype}, expected {expected}"
    for name in REQUIRED_COLUMNS:
        nulls = frame[name].is_null()
        if nulls.any():
            return f"column {name!r} has no value in row {int(nulls.arg_true()[0])}"
    # A NaN or infinite return has no statistics (bbrl.analysis.stats refuses it): named here, with its file.
    if frame.schema[Col.RETURN].is_float():
        bad = ~frame[Col.RETURN].is_finite()
        if bad.any():
            return f"column {Col.RETURN!r} holds a non-finite value (NaN or inf) in row {int(bad.arg_true()[0])}"
    # The JSON columns are parsed by the reports: each of their (few, constant) values once here.
    for name in (Col.PARAMS, Col.DETAILS):
        if name not in frame.columns:
            continue
        for text in frame[name].drop_nulls().unique(maintain_order=True).to_list():
            try:
                ok = text == "" or isinstance(json.loads(text), dict)
            except ValueError:
                ok = False
            if not ok:
                row = int((frame[name] == text).arg_true()[0])
                return f"column {name!r} holds {text[:40]!r} in row {row}, not a JSON object"
    return None


def _same_type(dtype: Any, expected: Any) -> bool:
    """Whether a column of type ``dtype`` holds what ``expected`` (a :data:`SCHEMA` type) does."""
    if dtype.is_numeric() or expected.is_numeric():
        return dtype.is_numeric() and expected.is_numeric()
    if isinstance(expected, pl.List):
        return isinstance(dtype, pl.List) and _same_type(dtype.inner, expected.inner)
    return dtype.base_type() == expected.base_type()


def _damaged(path: Path, exc: BaseException) -> CellFileError:
    return CellFileError(
        f"cell file {str(path)!r} is damaged or truncated ({type(exc).__name__}: {exc}); "
        "run `bbrl grid run` again to redo it"
    )


def _stopped_by_race(path: Path, rows: int, n_mdps: int) -> bool:
    """Whether a cell file with fewer rows than test MDPs is a cell a race stopped: its
    :data:`~bbrl.protocol.schema.RACE_STOPPED_BY` column names the stopper on every row."""
    try:
        column = pl.read_parquet(path, columns=[RACE_STOPPED_BY])[RACE_STOPPED_BY]
    except PARQUET_ERRORS:  # no such column: a cell of a full run
        return False
    return 0 < rows < n_mdps and column.null_count() == 0


class Results(NamedTuple):
    """``cells``: one row per finished cell with its statistics; ``returns``: one row per
    (cell, test MDP) with ``return`` and ``online_seconds`` (the long frame), and ``rewards`` (the
    MDP's T per-step rewards, null for cells that did not record them) when any cell recorded them."""

    cells: pl.DataFrame
    returns: pl.DataFrame


def check_results_folder(out: str | os.PathLike[str]) -> Path:
    """``out`` as a path, after checking that it is an existing folder (what every reader of a
    results folder checks first, so that a mistyped name is not read as an empty folder).

    Raises:
        FileNotFoundError: ``out`` does not exist, or is not a folder; the message names it.
    """
    folder = Path(out)
    if not folder.exists():
        raise FileNotFoundError(
            f"results folder {str(folder)!r} does not exist (the output folder of `bbrl grid run CONFIG --out DIR`)"
        )
    if not folder.is_dir():
        raise FileNotFoundError(f"results folder {str(folder)!r} is {path_kind(folder.stat().st_mode)}, not a folder")
    return folder


#: The file of a results folder that records each experiment's settings (name, test, prior, N,
#: gamma, T, seed), by experiment key: written by the grid runner (:mod:`bbrl.grid.store`).
EXPERIMENTS_FILE = "experiments.json"


def read_experiments(out: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The settings each experiment of results folder ``out`` was run with (its
    :data:`EXPERIMENTS_FILE`), by experiment key; empty when the folder has none (cells copied by
    hand). Every reader of a results folder reads it here, so that a damaged file is never taken
    for a missing one.

    Raises:
        ValueError: the file is not a JSON object of settings objects (truncated, edited); the
            message names it.
    """
    file = Path(out) / EXPERIMENTS_FILE
    if not file.exists():
        return {}
    if not file.is_file():
        raise ValueError(f"{file}: is {path_kind(file.stat().st_mode)}, not a regular file; {_EXPERIMENTS_FIX}")
    try:
        recorded = read_json_document(file, "experiment record")
        for key, settings in recorded.items():
            check_kind(settings, "an object", f"experiment record {str(file)!r}: field {key!r}")
    except ValueError as exc:
        raise ValueError(f"{exc}; {_EXPERIMENTS_FIX}") from None
    return recorded


_EXPERIMENTS_FIX = (
    "it records the settings of each experiment of the folder: restore it from a copy, or remove it "
    "(the next `bbrl grid run` records them again)"
)


def load(out: str | os.PathLike[str]) -> Results:
    """Reads every finished cell of the output folder of ``bbrl grid run``.

    ``cells`` has, besides the cell's identifiers and settings (``experiment``, ``prior``,
    ``kind``, ``algorithm``, ``label``, ``params`` and ``details`` as JSON, ``n_mdps``, ``gamma``,
    ``horizon``, ``seed``, ``bbrl_version``, the host and thread columns): ``n_run``, the test MDPs
    the cell ran (``n_mdps``, or fewer for a configuration a race stopped early), and
    ``race_stopped_by`` (what stopped it, as its cell file says; null for a cell that ran every
    MDP); ``mean``, ``ci95`` (half-width, 1.96 s / sqrt(n), over the ``n_run`` MDPs the cell ran:
    wider for a stopped cell), ``offline_seconds`` and ``offline_cpu_seconds``, the means over
    the MDPs ``online_seconds_per_trajectory``, ``online_cpu_seconds_per_trajectory`` (and per
    step), ``online_cpu_ci95_per_trajectory`` (the interval of that mean), and the times the maps
    and figures compare: ``online_time_per_trajectory``, ``online_time_per_step`` and
    ``offline_time``, CPU times where recorded, else wall times (``time_basis`` says which), and
    ``has_rewards`` (the cell recorded per-step rewards: :func:`rewards_matrix` gives them),
    ``online_work_per_trajectory`` (the mean work counts per trajectory, a struct; null for files
    written before work was counted), ``offline_work`` (a struct, null when unknown) and
    ``experiment_fingerprint`` (the experiment's :mod:`~bbrl.protocol.fingerprint`, as
    :attr:`bbrl.Run.fingerprint`; for files written before it was recorded, computed from the
    cell's settings when its test distribution is built in, else null).
    Rows are in the order of the configuration (``cell_index``).

    Raises:
        FileNotFoundError: ``out`` is not an existing folder, or holds no cell file.
        CellFileError: a cell file is damaged or truncated (the message names it).
        ValueError: the folder's :data:`EXPERIMENTS_FILE` is damaged (the message names it).
    """
    folder = check_results_folder(out) / "cells"
    read_experiments(out)  # damaged settings are an error, not a folder without them
    files = sorted(folder.rglob("*.parquet")) if folder.is_dir() else []
    if not files:
        raise FileNotFoundError(f"no finished cells in {str(Path(out))!r} (run `bbrl grid run CONFIG --out DIR` first)")
    return from_frames(read_cell_files(files))


def read_cell_files(files: list[Path]) -> list[pl.DataFrame]:
    """The frames of many cell files (:func:`read_cell_file`'s checks), read in one call when they
    can be: reading 150 small files one by one cost three times as long, most of it per call. Any
    file the one call cannot read (damaged, of an older schema) or whose rows fail the checks sends
    every file through :func:`read_cell_file`, whose error names the file.

    Raises:
        CellFileError: as :func:`read_cell_file`, naming the first bad file.
    """
    if len(files) > 1:
        source = SOURCE_FILE_COLUMN
        try:
            # Strict: a file with a column more or less than the first (another schema) fails the
            # one call (a polars too old to be told so fails it too), it is not read partly.
            whole = pl.scan_parquet(
                files,
                hive_partitioning=False,
                glob=False,
                include_file_paths=source,
                missing_columns="raise",
                extra_columns="raise",
            ).collect()
        except PARQUET_ERRORS:
            whole = None
        if (
            whole is not None
            and whole[source].n_unique() == len(files)  # no file without rows
            and all(c in whole.columns for c in REQUIRED_COLUMNS)
            and not schema_problem(whole)
        ):
            return [whole.drop(source)]
    # One by one: a clear error naming a damaged file, not a bare polars one.
    return [read_cell_file(file) for file in files]


def from_frames(frames: list[pl.DataFrame]) -> Results:
    """:func:`load`'s results from cell frames already read (one or more frames per cell, e.g. the
    batches of a raced cell, whose rows together are the cell's test MDPs)."""
    returns = _with_fingerprints(pl.concat(frames, how="diagonal_relaxed")).sort([Col.CELL_INDEX, Col.MDP])
    if Col.ONLINE_CPU_SECONDS not in returns.columns:  # every file predates CPU times
        returns = returns.with_columns(
            pl.lit(None, dtype=pl.Float64).alias(Col.ONLINE_CPU_SECONDS),
            pl.lit(None, dtype=pl.Float64).alias(Col.OFFLINE_CPU_SECONDS),
        )
    for work in (Col.ONLINE_WORK, Col.OFFLINE_WORK):  # every file predates work counts
        if work not in returns.columns:
            returns = returns.with_columns(pl.lit(None, dtype=WORK_DTYPE).alias(work))
    if REWARDS_COLUMN not in returns.columns:  # no cell recorded per-step rewards
        returns = returns.with_columns(pl.lit(None, dtype=pl.List(pl.Float64)).alias(REWARDS_COLUMN))
    # Only the files of cells a race stopped have the column: null for every other cell.
    stopped_by = pl.col(RACE_STOPPED_BY).first() if RACE_STOPPED_BY in returns.columns else pl.lit(None, pl.String)
    constant = [c for c in CELL_COLUMNS if c != Col.CELL_ID and c in returns.columns]
    cells = (
        returns.group_by(Col.CELL_ID, maintain_order=True)
        .agg(
            *[pl.col(c).first() for c in constant],
            pl.len().cast(pl.Int64).alias(Col.N_RUN),
            stopped_by.alias(RACE_STOPPED_BY),
            pl.col(Col.RETURN).alias("_returns"),
            pl.col(Col.ONLINE_SECONDS).mean().alias(Col.ONLINE_SECONDS_PER_TRAJECTORY),
            pl.col(Col.ONLINE_CPU_SECONDS).fill_nan(None).mean().alias(Col.ONLINE_CPU_SECONDS_PER_TRAJECTORY),
            pl.col(Col.ONLINE_CPU_SECONDS).fill_nan(None).alias("_cpu"),
            pl.col(REWARDS_COLUMN).is_not_null().all().alias(Col.HAS_REWARDS),
            _mean_work(returns),
        )
        .sort(Col.CELL_INDEX)
    )
    # One interval function for every 95% interval (stats.ci95_halfwidth).
    cells = cells.with_columns(
        pl.Series(Col.MEAN, [float(np.mean(r)) for r in cells["_returns"].to_list()], dtype=pl.Float64),
        pl.Series(Col.CI95, [ci95_halfwidth(np.asarray(r)) for r in cells["_returns"].to_list()], dtype=pl.Float64),
        pl.Series(
            Col.ONLINE_CPU_CI95_PER_TRAJECTORY,
            [ci95_halfwidth(np.asarray([x for x in c if x is not None])) for c in cells["_cpu"].to_list()],
            dtype=pl.Float64,
        ),
    ).drop("_returns", "_cpu")
    # The times the comparisons use: CPU time where it was recorded, else wall time.
    cpu_known = pl.col(Col.ONLINE_CPU_SECONDS_PER_TRAJECTORY).is_not_null()
    cells = cells.with_columns(
        (pl.col(Col.ONLINE_SECONDS_PER_TRAJECTORY) / pl.col(Col.HORIZON)).alias(Col.ONLINE_SECONDS_PER_STEP),
        (pl.col(Col.ONLINE_CPU_SECONDS_PER_TRAJECTORY) / pl.col(Col.HORIZON)).alias(Col.ONLINE_CPU_SECONDS_PER_STEP),
        pl.when(cpu_known)
        .then(pl.col(Col.ONLINE_CPU_SECONDS_PER_TRAJECTORY))
        .otherwise(pl.col(Col.ONLINE_SECONDS_PER_TRAJECTORY))
        .alias(Col.ONLINE_TIME_PER_TRAJECTORY),
        pl.when(cpu_known).then(pl.lit("cpu")).otherwise(pl.lit("wall")).alias(Col.TIME_BASIS),
        pl.col(Col.OFFLINE_CPU_SECONDS).fill_nan(None).fill_null(pl.col(Col.OFFLINE_SECONDS)).alias(Col.OFFLINE_TIME),
    ).with_columns((pl.col(Col.ONLINE_TIME_PER_TRAJECTORY) / pl.col(Col.HORIZON)).alias(Col.ONLINE_TIME_PER_STEP))
    return Results(cells=cells, returns=returns)


#: The settings of a cell that, with its test distribution's content, make its experiment's fingerprint.
_FINGERPRINTED = (Col.TEST, Col.N_MDPS, Col.GAMMA, Col.HORIZON, Col.SEED)


def _with_fingerprints(returns: pl.DataFrame) -> pl.DataFrame:
    """``returns`` with the :data:`~Col.FINGERPRINT` column, filled in for rows of files written
    before it was recorded from their own settings when their test distribution is a built-in one
    (whose content is the package's); left null for a distribution file (its content then is not
    known: the file may have changed since)."""
    from .. import distributions
    from .fingerprint import experiment_fingerprint

    if Col.FINGERPRINT not in returns.columns:
        returns = returns.with_columns(pl.lit(None, dtype=pl.String).alias(Col.FINGERPRINT))
    if any(c not in returns.columns for c in _FINGERPRINTED):
        return returns
    unknown = returns.filter(pl.col(Col.FINGERPRINT).is_null()).select(_FINGERPRINTED).unique()
    built_in = {name.lower() for name in distributions.names()}
    rows = [
        {
            **row,
            "_fingerprint": experiment_fingerprint(
                distributions.get(row[Col.TEST]).to_document(),
                row[Col.N_MDPS],
                row[Col.GAMMA],
                row[Col.HORIZON],
                row[Col.SEED],
            ),
        }
        for row in unknown.iter_rows(named=True)
        if None not in row.values() and str(row[Col.TEST]).lower() in built_in
    ]
    if not rows:
        return returns
    known = pl.DataFrame(rows, schema={**unknown.schema, "_fingerprint": pl.String})
    return (
        returns.join(known, on=list(_FINGERPRINTED), how="left")
        .with_columns(pl.col(Col.FINGERPRINT).fill_null(pl.col("_fingerprint")))
        .drop("_fingerprint")
    )


def _mean_work(returns: pl.DataFrame) -> pl.Expr:
    """The mean work per trajectory of a cell (a struct of float means; null when a row lacks it)."""
    fields = returns[Col.ONLINE_WORK].struct.fields if returns[Col.ONLINE_WORK].dtype != pl.Null else []
    known = [u for u in WORK_UNITS if u in fields]
    if not known:
        return pl.lit(None, dtype=pl.Struct({u: pl.Float64 for u in WORK_UNITS})).alias(Col.ONLINE_WORK_PER_TRAJECTORY)
    complete = pl.col(Col.ONLINE_WORK).is_not_null().all()
    means = [pl.col(Col.ONLINE_WORK).struct.field(u).cast(pl.Float64).mean().alias(u) for u in known]
    return pl.when(complete).then(pl.struct(means)).otherwise(None).alias(Col.ONLINE_WORK_PER_TRAJECTORY)


#: The per-MDP returns of each cell of the last returns table asked for (a weak reference to it
#: and its arrays): a report asks for a few cells at a time, hundreds of times, and splitting the
#: whole table each time was a large share of its time.
_RETURNS_BY_CELL: dict[int, tuple[weakref.ref, dict[str, np.ndarray]]] = {}


def returns_matrix(results: Results, cell_ids: list[str]) -> list[np.ndarray]:
    """The per-MDP returns of the given cells, in MDP order (for paired tests); each a new array."""
    returns = results.returns
    kept = _RETURNS_BY_CELL.get(id(returns))
    if kept is None or kept[0]() is not returns:
        # Sorted once, each cell's rows then in MDP order (a sort per cell was most of the time).
        in_order = returns.select(Col.CELL_ID, Col.MDP, Col.RETURN).sort(Col.CELL_ID, Col.MDP, maintain_order=True)
        parts = in_order.partition_by(Col.CELL_ID, as_dict=True, maintain_order=True)
        by_cell = {key[0]: part[Col.RETURN].to_numpy() for key, part in parts.items()}
        _RETURNS_BY_CELL.clear()
        _RETURNS_BY_CELL[id(returns)] = (weakref.ref(returns), by_cell)
    else:
        by_cell = kept[1]
    return [by_cell[cid].copy() for cid in cell_ids]


def rewards_matrix(results: Results, cell_id: str) -> np.ndarray:
    """The per-step rewards of cell ``cell_id``: an (n_mdps, T) float64 array, MDP ``i`` in row
    ``i``, in reward units per step.

    Raises:
        KeyError: no such cell.
        ValueError: the cell did not record rewards (its experiment lacks ``record_rewards = true``).
    """
    rows = results.returns.filter(pl.col(Col.CELL_ID) == cell_id).sort(Col.MDP)
    if rows.height == 0:
        raise KeyError(f"no cell {cell_id!r} in the results")
    if rows[REWARDS_COLUMN].null_count():
        raise ValueError(
            f"cell {cell_id!r} did not record per-step rewards (set record_rewards = true for its experiment)"
        )
    return rewards_array(rows[REWARDS_COLUMN])
