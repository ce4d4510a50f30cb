"""The cell store: where an output folder keeps each cell's result, failure record and trained
agent, which of them are complete, and the settings and configuration a folder was run with.

Layout of an output folder ``DIR``:

* ``DIR/cells/<experiment>/<prior>/<kind>/<params>.parquet``: a finished cell (one row per test
  MDP), written atomically; ``<params>.failed.json`` beside it records a cell whose agent failed.
  A cell that records per-step rewards is ``<params>+rewards.parquet``, with the ``rewards``
  column (see :mod:`bbrl.protocol.schema`).
* ``DIR/agents/...json``: trained agents, cached per (prior, agent, parameters, gamma, horizon, seed).
* ``DIR/config.toml``: the configuration last run; ``DIR/source.json``: the folder its relative
  files (distributions, Python agents) are read from.
* ``DIR/experiments.json``: each experiment's settings, so that a folder never mixes two settings.
* ``<params>.claim`` beside a cell's file: the runner computing it now (see :mod:`bbrl.grid.claims`);
  ``DIR/locks/``: lock files of the folder's shared files and of the trained-agent cache.

Runners may share a folder (shards, Dask workers, SLURM tasks): a cell is claimed before it runs,
a trained agent is trained and written once under its lock, and the shared files above are only
read-modified-written under the folder's lock.

A cell counts as done only when its file reads back with one row per test MDP: a file cut short
(a full disk, a copy interrupted) is reported as broken and run again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import polars as pl

from ..fileio import json_field, read_json_document, write_atomic
from ..protocol.results import (
    EXPERIMENTS_FILE,
    PARQUET_ERRORS,
    SOURCE_FILE_COLUMN,
    CellFileError,
    check_cell_file,
    read_experiments,
)
from .claims import Claim, ClaimInfo, file_lock, pid_alive, read_claim
from .config import load_config
from .model import Cell, ExperimentConfig, GridConfig

__all__ = [
    "CellFileError",
    "GridStatus",
    "agent_lock",
    "agent_path",
    "cell_claim",
    "cell_path",
    "check_cell_file",
    "claim_path",
    "config_for_folder",
    "experiment_folder",
    "failure_path",
    "load_output_config",
    "missing_by_experiment",
    "read_failure",
    "remove_stale_temp_files",
    "stale_temp_files",
    "status",
]


def _safe(component: str) -> str:
    """A file-name-safe, reversible spelling of one id component (percent-encoding)."""
    encoded = quote(component, safe="=,.+-_")
    return "%2E" + encoded[1:] if encoded.startswith(".") else encoded


def experiment_folder(root: Path, experiment: ExperimentConfig) -> Path:
    """``root/<experiment>/<prior>``, each part percent-encoded: where an experiment's files go
    under ``root`` (its cells under ``out/cells``, a race's decisions under ``out/race``)."""
    return root / _safe(experiment.name) / _safe(experiment.prior)


def cell_path(out: Path, cell: Cell) -> Path:
    """``out/cells/<experiment>/<prior>/<kind>/<params>.parquet``, each part percent-encoded
    (``<params>+rewards.parquet`` for a cell that records per-step rewards)."""
    tail = cell.params_id
    folder = experiment_folder(out / "cells", cell.experiment) / _safe(cell.kind)
    suffix = cell.suffix + ".parquet"
    return folder.parent / f"{folder.name}{suffix}" if not tail else folder / f"{_safe(tail)}{suffix}"


def failure_path(out: Path, cell: Cell) -> Path:
    """The failure record of a cell, beside where its result would be: ``<params>.failed.json``."""
    path = cell_path(out, cell)
    return path.with_name(path.name[: -len(".parquet")] + ".failed.json")


def claim_path(out: Path, cell: Cell) -> Path:
    """The claim of a cell being computed, beside its result: ``<params>.claim``."""
    path = cell_path(out, cell)
    return path.with_name(path.name[: -len(".parquet")] + ".claim")


def cell_claim(out: Path, cell: Cell) -> Claim:
    """A claim on ``cell`` for this process (not yet acquired; see :class:`~bbrl.grid.claims.Claim`)."""
    return Claim(claim_path(out, cell), out / "locks" / "claims.lock")


def agent_lock(out: Path, cell: Cell) -> Path:
    """The lock under which the cell's trained agent is looked up, trained and cached (once)."""
    relative = agent_path(out, cell).relative_to(out / "agents")
    return out / "locks" / "agents" / relative.with_name(relative.name + ".lock")


def agent_path(out: Path, cell: Cell) -> Path:
    """Cache file of the trained agent: the key is (prior, kind, parameters, gamma, horizon, seed)."""
    e = cell.experiment
    setting = f"gamma={e.gamma!r},horizon={e.horizon},seed={e.seed}"
    name = f"{cell.params_id},{setting}" if cell.params_id else setting
    return out / "agents" / _safe(e.prior) / _safe(cell.kind) / f"{_safe(name)}.json"


def read_failure(path: Path) -> str:
    """The error message of a failure record; for a record that is not one of ours, a message that
    says so and names it (a failure record is only shown: the cell runs again either way)."""
    try:
        record = read_json_document(path, "failure record")
        return str(json_field(record, "error", "a string", f"failure record {str(path)!r}"))
    except (ValueError, FileNotFoundError) as exc:
        return f"unreadable failure record: {exc}"


def write_failure(out: Path, cell: Cell, error: BaseException, details: str) -> Path:
    """Records that ``cell`` failed: its id, the error and the tail of the traceback (JSON)."""
    path = failure_path(out, cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"cell_id": cell.id, "error": f"{type(error).__name__}: {error}", "traceback": details}
    return write_atomic(path, (json.dumps(record, indent=1) + "\n").encode())


_TAG = re.compile(r"\.w-(?P<host>[^.]+)-(?P<pid>\d+)-[^.]*\.tmp$")


#: A temporary file of another host is stale when it has not been written to for this long: a
#: writer fills its temporary file in one go and renames it, within seconds.
STALE_TEMP_SECONDS = 3600.0


def stale_temp_files(out: Path) -> list[Path]:
    """Temporary files left by writers that no longer run (e.g. after ``kill -9``): of this host
    when their process is gone, of other hosts (whose processes cannot be checked from here) when
    untouched for :data:`STALE_TEMP_SECONDS`."""
    import time

    host = socket.gethostname().replace(".", "-")
    now = time.time()
    stale = []
    for folder in (out / "cells", out / "agents", out / "batches"):
        if not folder.is_dir():
            continue
        for tmp in folder.rglob(".*.tmp"):
            match = _TAG.search(tmp.name)
            if not match:
                continue
            if match.group("host") == host:
                if not pid_alive(int(match.group("pid"))):
                    stale.append(tmp)
            else:
                with contextlib.suppress(FileNotFoundError):
                    if now - tmp.stat().st_mtime > STALE_TEMP_SECONDS:
                        stale.append(tmp)
    return stale


def remove_stale_temp_files(out: Path) -> None:
    """Removes the :func:`stale_temp_files` of ``out``: what every runner does before it starts, so
    that a writer killed mid-write (``kill -9``, a lost node) leaves nothing behind for long."""
    for tmp in stale_temp_files(out):
        tmp.unlink(missing_ok=True)


def claims(out: Path) -> list[ClaimInfo]:
    """Every claim in ``out`` (live ones: cells being computed; expired ones: left by dead runners,
    taken over by the next runner that reaches the cell)."""
    folder = out / "cells"
    found = (read_claim(path) for path in folder.rglob("*.claim")) if folder.is_dir() else ()
    return [c for c in found if c is not None]


def folder_lock(out: Path) -> Any:
    """The lock under which the folder's shared files (``experiments.json``, ``config.toml``,
    ``source.json``) are read, changed and written: runners starting together never lose an entry."""
    return file_lock(out / "locks" / "folder.lock")


def check_settings(out: Path, config: GridConfig) -> None:
    """Refuses to mix results of an experiment run with other settings under the same name."""
    with folder_lock(out):
        _check_settings(out, config)


def _check_settings(out: Path, config: GridConfig) -> None:
    recorded = read_experiments(out)
    changed = False
    # A folder written before the option recorded no rewards: a missing key means false. Mixing
    # cells with and without rewards of one experiment in one folder is refused like any other
    # change of settings (a report would show each setting twice).
    unrecorded = {"record_rewards": False}
    for experiment in config.experiments:
        settings = experiment.settings()
        old = recorded.get(experiment.key)
        if old is None:
            recorded[experiment.key] = settings
            changed = True
        elif {**unrecorded, **old} != {**unrecorded, **settings}:
            now, before = {**unrecorded, **settings}, {**unrecorded, **old}
            diff = ", ".join(f"{k} {before.get(k)!r} there, {v!r} here" for k, v in now.items() if before.get(k) != v)
            raise ValueError(
                f"{out} holds results of experiment {experiment.key!r} with other settings ({diff}); "
                "use another --out folder or another experiment name"
            )
    if changed:
        write_atomic(out / EXPERIMENTS_FILE, (json.dumps(recorded, indent=1) + "\n").encode())


def record_config(out: Path, config: GridConfig) -> None:
    """Keeps a copy of the configuration in ``out`` and the folder its relative files come from,
    so that ``bbrl grid status OUT`` reads the copy as the original was read."""
    with folder_lock(out):
        _record_config(out, config)


def _record_config(out: Path, config: GridConfig) -> None:
    write_atomic(out / "config.toml", config.text.encode())
    base = config.base if config.base is not None else (config.path.resolve().parent if config.path else None)
    source = {
        "config": str(config.path.resolve()) if config.path else None,
        "base": str(base) if base else None,
        # Its Python agents as data: reading the folder never imports their classes.
        "python_agents": list(config.python_agents),
    }
    write_atomic(out / "source.json", (json.dumps(source, indent=1) + "\n").encode())


def load_output_config(out: Path, check_agents: bool = False) -> GridConfig:
    """The configuration an output folder was last run with (its ``config.toml``), its relative
    files read from the original configuration's folder.

    Reading a folder never imports code: its Python agents come from the folder's record of them
    (``source.json``) as :class:`~bbrl.grid.model.RecordedAgent` specs, which show in a status or a
    report but cannot run (:func:`config_for_folder` runs them from the user's configuration)."""
    config_file = out / "config.toml"
    if not config_file.is_file():
        raise FileNotFoundError(f"{out} has no config.toml: is it the output folder of `bbrl grid run`?")
    base: Any = None
    python_agents: Any = []
    source = out / "source.json"
    if source.is_file():
        recorded = read_json_document(source, "results folder's source record")
        where = f"results folder's source record {str(source)!r}"
        if recorded.get("base") is not None:
            base = json_field(recorded, "base", "a string", where)
        python_agents = json_field(recorded, "python_agents", "a list", where, [])
    return load_config(config_file, check_agents=check_agents, base=base, python_agents=python_agents)


def config_for_folder(out: Path, config_path: str | os.PathLike[str] | None) -> GridConfig:
    """The configuration to *run* the cells of folder ``out`` with: ``config_path``'s (the one the
    user names, whose Python agents' classes are imported), which must be the folder's own
    (``config.toml``, same text); without it, the folder's copy, which may name no Python agent
    (bbrl never imports a class a results folder names).

    Raises:
        ValueError: naming the folder, when the configurations differ or a Python agent's
            configuration is needed.
    """
    if config_path is None:
        config = load_output_config(out, check_agents=True)
        python = [cell.id for cell in config.cells if not cell.runnable]
        if python:
            raise ValueError(
                f"{out}: its configuration names Python agents (cell {python[0]}), whose classes bbrl imports only "
                "from a configuration named on the command line: pass it with --config FILE"
            )
        return config
    config = load_config(config_path)
    recorded = (out / "config.toml").read_text(encoding="utf-8") if (out / "config.toml").is_file() else None
    if recorded != config.text:
        raise ValueError(
            f"{out} was run with another configuration than {str(config_path)!r} ({out / 'config.toml'} differs): "
            "pass the configuration the folder was run with"
        )
    return config


@dataclass
class GridStatus:
    """What is done in an output folder for a configuration.

    Attributes:
        done: cells whose file reads back whole.
        missing: cells with no result yet (neither a file nor a failure record).
        failed: cells whose last run failed, with the recorded error.
        broken: cells whose file is damaged or short, with what is wrong (run again by the runner).
        stale_temp_files: temporary files of writers that no longer run.
        running: missing cells claimed by a live runner, with who holds the claim (a subset of
            ``missing``: a claim is no result).
        expired_claims: claims left by runners that died (taken over when their cell runs again).
    """

    done: list[Cell]
    missing: list[Cell]
    stale_temp_files: list[Path]
    failed: list[tuple[Cell, str]]
    broken: list[tuple[Cell, str]]
    running: list[tuple[Cell, str]] = dataclasses.field(default_factory=list)
    expired_claims: list[Path] = dataclasses.field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.done) + len(self.missing) + len(self.failed) + len(self.broken)


def status(config: GridConfig, out: str | os.PathLike[str], footers_only: bool = False) -> GridStatus:
    """Which cells of ``config`` are done, failed, broken or missing in ``out``.

    ``footers_only``: a cell whose file's Parquet footer gives one row per test MDP counts as done
    without reading its columns (:func:`_rows_in_footer`); any other file is checked in full. For a
    reader that reads every file whole next (a report), which then names a damaged one.

    Raises:
        ValueError: the folder's ``experiments.json`` is damaged (the message names it).
    """
    folder = Path(out)
    read_experiments(folder)  # damaged settings are an error, not a folder without them
    done: list[Cell] = []
    missing: list[Cell] = []
    failed: list[tuple[Cell, str]] = []
    broken: list[tuple[Cell, str]] = []
    paths = [cell_path(folder, cell) for cell in config.cells]
    footer_rows = _rows_in_footers([p for p in paths if p.is_file()]) if footers_only else {}
    for cell, path in zip(config.cells, paths, strict=True):
        if path.is_file():
            if footers_only and footer_rows.get(path) == cell.experiment.n_mdps:
                done.append(cell)
                continue
            try:
                check_cell_file(path, cell.experiment.n_mdps)
                done.append(cell)
            except CellFileError as exc:
                broken.append((cell, str(exc)))
        elif failure_path(folder, cell).is_file():
            failed.append((cell, read_failure(failure_path(folder, cell))))
        else:
            missing.append(cell)
    running: list[tuple[Cell, str]] = []
    expired: list[Path] = []
    for cell in missing + [c for c, _ in failed] + [c for c, _ in broken]:
        holder = read_claim(claim_path(folder, cell))
        if holder is None:
            continue
        if holder.expired:
            expired.append(holder.path)
        else:
            running.append((cell, holder.describe()))
    return GridStatus(done, missing, stale_temp_files(folder), failed, broken, running, expired)


def _rows_in_footers(paths: list[Path]) -> dict[Path, int | None]:
    """:func:`_rows_in_footer` of every file, in one scan when every footer can be read (a scan per
    file cost six times as long, most of it per call); else file by file."""
    if len(paths) > 1:
        source = SOURCE_FILE_COLUMN
        try:
            counts = (
                pl.scan_parquet(paths, hive_partitioning=False, glob=False, include_file_paths=source)
                .group_by(source)
                .len()
                .collect()
            )
        except PARQUET_ERRORS:
            counts = None
        if counts is not None:
            by_name = dict(zip(counts[source].to_list(), counts["len"].to_list(), strict=True))
            # A file without rows has no group: its footer says 0.
            return {p: int(by_name.get(str(p), 0)) for p in paths}
    return {p: _rows_in_footer(p) for p in paths}


def _rows_in_footer(path: Path) -> int | None:
    """The number of rows a Parquet file's footer records (None: no footer can be read, e.g. a
    file cut short), without reading its columns."""
    try:
        return int(pl.scan_parquet(path).select(pl.len()).collect().item())
    except PARQUET_ERRORS:
        return None


def missing_by_experiment(results_dir: str | os.PathLike[str]) -> dict[str, int]:
    """Cells of the folder's configuration without a usable result, per experiment key (empty if
    the folder has no configuration, e.g. cells copied by hand).

    A cell file whose footer gives one row per test MDP counts as a result without reading its
    columns: the reports that ask read every cell file whole next (and name a damaged one), and
    reading each file twice was a tenth of a report's time."""
    try:
        config = load_output_config(Path(results_dir), check_agents=False)
    except (FileNotFoundError, ValueError):
        return {}
    state = status(config, results_dir, footers_only=True)
    missing: dict[str, int] = {}
    for cell in [*state.missing, *(c for c, _ in state.failed), *(c for c, _ in state.broken)]:
        missing[cell.experiment.key] = missing.get(cell.experiment.key, 0) + 1
    return missing
