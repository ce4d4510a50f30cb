"""Fuzz and safety tests of the agent-file reader, ``bbrl.agents.load`` (docs/safety.md): a damaged
file gets a one-line ValueError naming it, and no file runs code when it is loaded (no pickle
without an explicit opt-in, no module imported by a load)."""

from __future__ import annotations

import base64
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from _fuzz import FUZZ, assert_reader_fails_cleanly, fresh_copy, json_damage
from hypothesis import given
from rich.console import Console

from bbrl import agents, distributions, grid


@pytest.fixture(scope="module")
def agent_documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Valid agent files: a built-in agent retrained on load (e-Greedy) and one with a saved state
    (OPPS-DS)."""
    folder = tmp_path_factory.mktemp("agents")
    prior = distributions.get("GC")
    documents = {}
    for name, spec in (("egreedy", agents.EGreedy(epsilon=0.1)), ("oppsds", agents.OPPSDS(formula_set=2, n_draws=5))):
        path = spec.train(prior, 0.95, 5, 0).save(folder / f"{name}.json")
        documents[name] = json.loads(path.read_text())
    return documents


@pytest.mark.parametrize("name", ["egreedy", "oppsds"])
def test_damaged_agent_files(tmp_path: Path, agent_documents: dict[str, Any], name: str) -> None:
    @FUZZ
    @given(damage=json_damage(agent_documents[name]))
    def check(damage: bytes) -> None:
        path = tmp_path / "agent.json"
        path.write_bytes(damage)
        assert_reader_fails_cleanly(lambda: agents.load(path), path.name, tmp_path)

    check()


class _Planted:
    """A pickle payload that, when unpickled, creates the marker file named by its argument."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


def _planted_file(tmp_path: Path, document: dict[str, Any]) -> tuple[Path, Path]:
    marker = tmp_path / "marker"
    payload = base64.b64encode(pickle.dumps(_Planted(marker))).decode("ascii")
    planted = {**document, "python": {"class": "evil:C", "pickle": payload, "spec_pickle": payload}}
    path = tmp_path / "planted.json"
    path.write_text(json.dumps(planted))
    return path, marker


def test_a_pickle_in_an_agent_file_is_not_run(tmp_path: Path, agent_documents: dict[str, Any]) -> None:
    path, marker = _planted_file(tmp_path, agent_documents["egreedy"])
    with pytest.raises(ValueError, match=r"planted\.json.*allow_pickle"):
        agents.load(path)
    assert not marker.exists()


def test_an_agent_file_naming_a_module_not_imported_is_refused(tmp_path: Path) -> None:
    document = {
        "format": "bbrl-agent",
        "version": 1,
        "python": {"class": "bbrl_never_imported_module:Agent", "state": {}},
        "prior": distributions.get("GC").to_document(),
        "gamma": 0.95,
        "horizon": 5,
        "seed": 0,
    }
    path = tmp_path / "unknown.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=r"unknown\.json.*bbrl_never_imported_module.*agent_class"):
        agents.load(path)


def test_an_agent_file_that_keeps_the_schema_is_accepted(tmp_path: Path, agent_documents: dict[str, Any]) -> None:
    """Another epsilon is another agent, read as such (the threat model's "wrong numbers")."""
    document = json.loads(json.dumps(agent_documents["egreedy"]))
    document["params"]["epsilon"] = 0.5
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(document))
    assert agents.load(path).params["epsilon"] == 0.5


def test_a_planted_cached_agent_file_is_retrained_not_run(grid_folder: Path, tmp_path: Path) -> None:
    out = fresh_copy(grid_folder, tmp_path)
    config = grid.load_output_config(out)
    cell = config.cells[0]
    cached = grid.agent_path(out, cell)
    path, marker = _planted_file(tmp_path, json.loads(cached.read_text()))
    cached.write_text(path.read_text())
    grid.cell_path(out, cell).unlink()
    for claim in out.rglob("*.claim"):  # the folder's claim (of a runner elsewhere) would skip the cell
        claim.unlink()
    with pytest.warns(RuntimeWarning, match=r"cached trained agent refused and trained again"):
        grid.run_grid(config, out, threads=1, console=Console(quiet=True))
    assert not marker.exists()
    assert grid.cell_path(out, cell).is_file()
