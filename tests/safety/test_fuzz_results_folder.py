"""Fuzz tests of the readers of a results folder's JSON records (docs/safety.md): experiments.json,
source.json, race.json, the per-experiment race records, plan.json, claims, failure records and the SLURM
task and job files. Each damages one file of a copy of a valid folder and calls its reader
in-process; an edit that keeps the schema is accepted."""

from __future__ import annotations

import json
from pathlib import Path

from _fuzz import FUZZ, assert_reader_fails_cleanly, fresh_copy, named_json_damage
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from bbrl import grid
from bbrl.analysis.racing import RaceOptions
from bbrl.analysis.report import race_settings
from bbrl.grid import plan as grid_plan
from bbrl.grid import race as grid_race
from bbrl.grid import store
from bbrl.grid.claims import read_claim
from bbrl.grid.engines import slurm


def _damaged_copy(folder: Path, relative: str, data: st.DataObject, tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """A fresh copy of ``folder`` whose file ``relative`` is damaged: (the copy, the file, the name
    of the field changed, if one was, which an error must name)."""
    document = json.loads((folder / relative).read_text())
    out = fresh_copy(folder, tmp_path)
    damage, field = data.draw(named_json_damage(document), label=relative)
    (out / relative).write_bytes(damage)
    return out, out / relative, [field] if field else []


def _relative(folder: Path, pattern: str) -> str:
    return str(next(folder.rglob(pattern)).relative_to(folder))


@FUZZ
@given(data=st.data())
def test_experiments_json(grid_folder: Path, tmp_path: Path, data: st.DataObject) -> None:
    out, file, field = _damaged_copy(grid_folder, "experiments.json", data, tmp_path)
    config = store.load_output_config(grid_folder)
    # A changed setting is refused naming the folder; a damaged file, naming the file.
    assert_reader_fails_cleanly(lambda: store.check_settings(out, config), [file.name, str(out)], out, field)


@FUZZ
@given(data=st.data())
def test_source_json(grid_folder: Path, tmp_path: Path, data: st.DataObject) -> None:
    out, file, field = _damaged_copy(grid_folder, "source.json", data, tmp_path)
    # A config.toml that names relative files reads them from the recorded base: an edited base
    # that points elsewhere is refused by the configuration's reader, naming its file.
    assert_reader_fails_cleanly(lambda: store.load_output_config(out), [file.name, "config.toml"], out, field)


@FUZZ
@given(data=st.data())
def test_race_json(race_folder: Path, tmp_path: Path, data: st.DataObject) -> None:
    out, file, field = _damaged_copy(race_folder, "race.json", data, tmp_path)
    assert_reader_fails_cleanly(lambda: grid_race.recorded_race(out), file.name, out, field)
    assert_reader_fails_cleanly(lambda: race_settings(out), file.name, out, field)
    # Resuming the race compares the record with the options given: a differing one is refused.
    assert_reader_fails_cleanly(lambda: grid_race.record_race(out, RaceOptions(batch=2)), [file.name, str(out)], out)


@FUZZ
@given(data=st.data())
def test_race_state(race_folder: Path, tmp_path: Path, data: st.DataObject) -> None:
    relative = str(next((race_folder / "race").rglob("*.json")).relative_to(race_folder))
    out, file, field = _damaged_copy(race_folder, relative, data, tmp_path)
    experiment = store.load_output_config(race_folder).experiments[0]
    assert_reader_fails_cleanly(lambda: grid_race.race_state(out, experiment), file.name, out, field)


@FUZZ
@given(data=st.data())
def test_plan_json(grid_folder: Path, tmp_path: Path, data: st.DataObject) -> None:
    out, file, field = _damaged_copy(grid_folder, "plan.json", data, tmp_path)
    cells = store.load_output_config(grid_folder).cells
    assert_reader_fails_cleanly(lambda: grid_plan.read_plan(out), file.name, out, field)
    assert_reader_fails_cleanly(lambda: grid_plan.read_plan_offline(out), file.name, out)
    assert_reader_fails_cleanly(lambda: slurm._predicted(list(cells), out), file.name, out)


@FUZZ
@given(data=st.data())
def test_claims(grid_folder: Path, tmp_path: Path, data: st.DataObject) -> None:
    out, file, _field = _damaged_copy(grid_folder, _relative(grid_folder, "*.claim"), data, tmp_path)
    # A claim bbrl cannot read is a foreign file: it counts as expired at once (taken over).
    claim = read_claim(file)
    assert claim is not None and claim.path == file
    assert_reader_fails_cleanly(lambda: store.claims(out), file.name, out)


@FUZZ
@given(data=st.data())
def test_failure_records(grid_folder: Path, tmp_path: Path, data: st.DataObject) -> None:
    out, file, _field = _damaged_copy(grid_folder, _relative(grid_folder, "*.failed.json"), data, tmp_path)
    message = store.read_failure(file)
    assert isinstance(message, str) and "\n" not in message
    config = store.load_output_config(grid_folder)
    assert_reader_fails_cleanly(lambda: grid.status(config, out), file.name, out)


@FUZZ
@given(data=st.data())
def test_slurm_tasks_file(grid_folder: Path, tmp_path: Path, data: st.DataObject) -> None:
    out, file, _field = _damaged_copy(grid_folder, "slurm/tasks.json", data, tmp_path)
    console = Console(quiet=True)
    # Every cell is done: a task that reads its file whole runs nothing.
    assert_reader_fails_cleanly(lambda: slurm.run_task(out, 0, console), [file.name, str(out)], out)


@FUZZ
@given(data=st.data())
def test_slurm_jobs_file(grid_folder: Path, tmp_path: Path, data: st.DataObject) -> None:
    out, file, field = _damaged_copy(grid_folder, "slurm/jobs.json", data, tmp_path)
    assert_reader_fails_cleanly(lambda: slurm.read_jobs(out), file.name, out, field)


@FUZZ
@given(data=st.data())
def test_slurm_options_file(grid_folder: Path, tmp_path: Path, data: st.DataObject) -> None:
    out, file, field = _damaged_copy(grid_folder, "slurm/options.json", data, tmp_path)
    assert_reader_fails_cleanly(lambda: slurm.max_resubmits(out), file.name, out, field)


def test_records_that_keep_the_schema_are_accepted(grid_folder: Path, race_folder: Path, tmp_path: Path) -> None:
    """An edit that keeps the schema reads as data (docs/safety.md, threat model): other numbers
    are taken as they are."""
    out = fresh_copy(grid_folder, tmp_path)
    plan = json.loads((out / "plan.json").read_text())
    plan["cells"] = {k: 1e6 for k in plan["cells"]}
    (out / "plan.json").write_text(json.dumps(plan))
    assert set(grid_plan.read_plan(out).values()) == {1e6}
    jobs = [{"job": "7", "tasks": [1]}]
    (out / "slurm" / "jobs.json").write_text(json.dumps(jobs))
    assert slurm.read_jobs(out) == jobs
    race = fresh_copy(race_folder, tmp_path / "race")
    state = next((race / "race").rglob("*.json"))
    document = json.loads(state.read_text())
    next(iter(document["stops"].values()))["lower"] = -99.0
    state.write_text(json.dumps(document))
    experiment = store.load_output_config(race).experiments[0]
    assert next(iter(grid_race.race_state(race, experiment).stops.values())).lower == -99.0
