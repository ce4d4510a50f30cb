"""Files bbrl reads never run code: planted pickles, a results folder naming a Python file, and an
agent file naming a module not yet imported, against every reader that meets them (agents.load,
``bbrl run --agent-file``, ``bbrl grid run`` resuming a folder, ``bbrl grid status``, ``bbrl
report``, the report ``bbrl paper`` writes, and the SLURM task). Each plant, if run, would write a
marker file: it never appears, and the error names the file and how to opt in or pass the class."""

from __future__ import annotations

import base64
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bbrl
from bbrl import agents, distributions, grid

GRID = """\
[defaults]
n_mdps = 4
horizon = 6
seed = 3

[[experiment]]
name = "GC"
test = "GC"

[[agent]]
kind = "random"

[[agent]]
kind = "egreedy"
epsilon = [0.5]
"""

PLANTED_MODULE = "planted_agent_module"


class _Payload:
    """Unpickling it writes the marker file (what a malicious pickle would do instead)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('ran')",))


def _bbrl() -> list[str]:
    exe = shutil.which("bbrl", path=os.path.dirname(sys.executable))  # the CLI under test, not PATH's
    return [exe] if exe else [sys.executable, "-m", "bbrl"]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*_bbrl(), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.fixture
def plant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The marker, and a module on sys.path whose import writes it (importable: never imported)."""
    marker = tmp_path / "MARKER"
    (tmp_path / f"{PLANTED_MODULE}.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\n"
        "from bbrl import agents\n\n\n"
        "class Planted(agents.Agent):\n"
        "    def act(self, state, rng):\n"
        "        return 0\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    yield marker
    assert PLANTED_MODULE not in sys.modules
    assert not marker.exists(), marker.read_text()


def _agent_document(python: dict) -> dict:
    return {
        "format": "bbrl-agent",
        "version": 1,
        "kind": "Planted",
        "params": {},
        "label": "Planted",
        "gamma": 0.95,
        "horizon": 6,
        "seed": 3,
        "offline_seconds": 0.0,
        "prior": distributions.get("GC").to_document(),
        "python": python,
    }


def _pickled_agent(marker: Path) -> dict:
    payload = base64.b64encode(pickle.dumps(_Payload(marker))).decode()
    return _agent_document({"class": f"{PLANTED_MODULE}.Planted", "pickle": payload, "spec_pickle": payload})


def _unimported_agent() -> dict:
    return _agent_document({"class": f"{PLANTED_MODULE}:Planted", "state": {}, "spec_state": {}})


def _write(path: Path, document: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


# --- agents.load and bbrl run --agent-file -------------------------------------------------------


def test_load_refuses_pickles_without_the_opt_in(plant: Path, tmp_path: Path) -> None:
    file = _write(tmp_path / "old.json", _pickled_agent(plant))
    with pytest.raises(ValueError, match=r"old\.json: this agent file holds pickled Python objects.*allow_pickle=True"):
        agents.load(file)


def test_load_never_imports_the_module_a_file_names(plant: Path, tmp_path: Path) -> None:
    file = _write(tmp_path / "agent.json", _unimported_agent())
    with pytest.raises(
        ValueError,
        match=rf"agent\.json: the agent's class {PLANTED_MODULE}:Planted is not imported; loading an agent file "
        r"never imports a module .*agent_class=Planted.*--agent-class",
    ):
        agents.load(file)


def test_run_agent_file_refuses_pickles_and_unimported_classes(plant: Path, tmp_path: Path) -> None:
    for name, document, expected in (
        ("old.json", _pickled_agent(plant), "--allow-pickle"),
        ("agent.json", _unimported_agent(), "--agent-class FILE.py:Planted"),
    ):
        _write(tmp_path / name, document)
        done = _cli("run", "--experiment", "GC", "--agent-file", name, "--n-mdps", "2", cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert name in done.stderr and expected in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_the_opt_in_reads_an_old_file_once_and_convert_rewrites_it_as_data(tmp_path: Path) -> None:
    from test_agent_file_format import StatefulAgent  # an importable class of the tests

    trained = StatefulAgent().train("UGC", 0.95, 6, 3)
    old = trained.write_file(
        tmp_path / "old.json",
        state=None,
        python={
            "class": "test_agent_file_format.StatefulAgent",
            "pickle": base64.b64encode(pickle.dumps(trained.agent)).decode(),
            "spec_pickle": base64.b64encode(pickle.dumps(trained.spec)).decode(),
        },
    )
    with pytest.warns(agents.UnsafeLoadWarning, match="runs whatever code the file holds"):
        agents.load(old, allow_pickle=True)
    refused = _cli("agents", "convert", "old.json", "new.json", cwd=tmp_path)
    assert refused.returncode == 2 and "--allow-pickle" in refused.stderr and not (tmp_path / "new.json").exists()
    here = str(Path(__file__).parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [*_bbrl(), "agents", "convert", "old.json", "new.json", "--allow-pickle"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "UnsafeLoadWarning" in done.stderr
    assert "pickle" not in json.loads((tmp_path / "new.json").read_text())["python"]
    exp = bbrl.Experiment("GC", n_mdps=3, horizon=6, seed=3)
    new = agents.load(tmp_path / "new.json")
    assert np.array_equal(exp.run(new, threads=1).returns, exp.run(trained, threads=1).returns)


# --- results folders ----------------------------------------------------------------------------


def _folder_naming_a_python_file(tmp_path: Path) -> Path:
    """A results folder whose config.toml names the planted module's file as a Python agent."""
    out = tmp_path / "results"
    out.mkdir()
    (out / "config.toml").write_text(GRID + f'\n[[agent]]\nkind = "python"\nclass = "{PLANTED_MODULE}.py:Planted"\n')
    (out / "source.json").write_text(json.dumps({"config": None, "base": str(tmp_path)}))
    return out


def test_grid_status_and_report_never_import_a_file_a_folder_names(plant: Path, tmp_path: Path) -> None:
    out = _folder_naming_a_python_file(tmp_path)
    status = _cli("grid", "status", "results", cwd=tmp_path)
    assert status.returncode == 2, status.stdout + status.stderr
    assert "never imports a class it names" in status.stderr and "Traceback" not in status.stderr
    assert "bbrl grid status CONFIG --out DIR" in status.stderr
    report = _cli("report", "results", "--out", "report", cwd=tmp_path)
    assert "Traceback" not in report.stderr
    # `bbrl paper` writes its report with the same readers: the folder's missing cells (none known
    # here, since the folder's configuration cannot be read without importing) and its cells.
    assert grid.missing_by_experiment(out) == {}


def test_the_slurm_task_runs_python_agents_only_from_the_named_configuration(plant: Path, tmp_path: Path) -> None:
    out = _folder_naming_a_python_file(tmp_path)
    (out / "slurm").mkdir()
    (out / "slurm" / "tasks.json").write_text(json.dumps([["GC/GC/random"]]))
    done = _cli("grid", "task", "results", "0", cwd=tmp_path)
    assert done.returncode == 2 and "never imports a class it names" in done.stderr, done.stderr
    other = tmp_path / "other.toml"
    other.write_text(GRID)
    done = _cli("grid", "task", "results", "0", "--config", "other.toml", cwd=tmp_path)
    assert done.returncode == 2 and "was run with another configuration" in done.stderr, done.stderr


def test_grid_run_resuming_a_folder_refuses_planted_cache_files(plant: Path, tmp_path: Path) -> None:
    config_file = tmp_path / "grid.toml"
    config_file.write_text(GRID)
    config = grid.load_config(config_file)
    out = _folder_naming_a_python_file(tmp_path)
    pickled, unimported = (grid.agent_path(out, cell) for cell in config.cells)
    _write(pickled, {**_pickled_agent(plant), "kind": "random"})
    _write(unimported, {**_unimported_agent(), "kind": "egreedy", "params": {"epsilon": 0.5}})
    done = _cli("grid", "run", "grid.toml", "--out", "results", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for path in (pickled, unimported):
        warning = f"bbrl: RuntimeWarning: {path.relative_to(tmp_path)}: cached trained agent refused"
        assert warning in done.stderr, done.stderr
        assert "python" not in json.loads(path.read_text())
    assert len(grid.status(config, out).done) == 2
    # The folder now records the configuration that ran (no Python agent): reading it imports nothing.
    assert "grid run" not in _cli("grid", "status", "results", cwd=tmp_path).stderr
