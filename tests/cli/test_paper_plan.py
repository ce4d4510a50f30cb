"""`bbrl paper` states its plan before the full study and starts nothing above the limit."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from bbrl.analysis.cost import REFERENCE
from bbrl.cli.paper import _config, run_paper
from bbrl.grid.plan import plan_path, read_plan_calibration


def _keep_plan(folder: Path, name: str, seconds_per_cell: float) -> int:
    """A plan kept in ``folder`` as `bbrl grid plan --out` writes it (no pilot needed), priced with
    the shipped calibration (a plan priced otherwise is measured again)."""
    cells = _config(name).cells
    folder.mkdir(parents=True)
    document = {"cells": {c.id: seconds_per_cell for c in cells}, "calibration": REFERENCE}
    plan_path(folder).write_text(json.dumps(document))
    return len(cells)


def test_the_full_study_states_its_plan_and_stops_above_the_limit(tmp_path: Path) -> None:
    n_accurate = _keep_plan(tmp_path / "accurate", "paper-accurate", 3600.0)
    n_inaccurate = _keep_plan(tmp_path / "inaccurate", "paper-inaccurate", 7200.0)
    out = io.StringIO()
    console = Console(file=out, width=300)
    assert run_paper(quick=False, out=tmp_path, console=console, max_core_hours=100.0) is None
    text = out.getvalue()
    assert f"{n_accurate} of {n_accurate} cells to run" in text and f"{n_accurate:.3g} core-hours" in text
    assert f"{n_inaccurate} of {n_inaccurate} cells" in text
    assert f"{n_accurate + 2 * n_inaccurate:.3g} core-hours in all" in text
    assert "nothing started" in text and "--yes" in text
    # Nothing ran: no cell, no claim, no trained agent.
    assert not list(tmp_path.rglob("*.parquet")) and not (tmp_path / "accurate" / "cells").exists()


def test_a_shard_plans_only_its_own_cells(tmp_path: Path) -> None:
    n = _keep_plan(tmp_path / "accurate", "paper-accurate", 3600.0)
    _keep_plan(tmp_path / "inaccurate", "paper-inaccurate", 3600.0)
    out = io.StringIO()
    assert (
        run_paper(quick=False, out=tmp_path, shard="1/4", console=Console(file=out, width=300), max_core_hours=1.0)
        is None
    )
    assert f"{len(range(0, n, 4))} of {len(range(0, n, 4))} cells to run" in out.getvalue()


def test_the_limit_must_be_positive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bbrl.cli import main

    assert main(["paper", "--out", str(tmp_path / "p"), "--max-core-hours", "0"]) == 2
    assert "--max-core-hours must be positive, got 0.0" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


def test_with_race_the_race_pilot_alone_must_fit_the_limit(tmp_path: Path) -> None:
    from bbrl.analysis.racing import RaceOptions

    for folder, name in (("accurate", "paper-accurate"), ("inaccurate", "paper-inaccurate")):
        _keep_plan(tmp_path / folder, name, 3600.0)
        document = json.loads(plan_path(tmp_path / folder).read_text())
        document["offline_cells"] = {cell_id: 0.0 for cell_id in document["cells"]}
        plan_path(tmp_path / folder).write_text(json.dumps(document))
    out = io.StringIO()
    console = Console(file=out, width=300)
    assert run_paper(quick=False, out=tmp_path, console=console, max_core_hours=10.0, race=RaceOptions()) is None
    text = out.getvalue()
    assert "core-hours in all without racing" in text
    # N = 500 in batches of 50: the pilot is a tenth of each cell's online cost.
    assert "the race pilot alone" in text and "nothing started" in text
    assert not list(tmp_path.rglob("*.parquet")) and not (tmp_path / "accurate" / "batches").exists()


def test_a_plan_says_which_calibration_priced_it(tmp_path: Path) -> None:
    # Kept before plans were priced from work (measured CPU times): no calibration, measured again.
    assert read_plan_calibration(tmp_path) is None
    plan_path(tmp_path).write_text(json.dumps({"cells": {}}))
    assert read_plan_calibration(tmp_path) is None
    plan_path(tmp_path).write_text(json.dumps({"cells": {}, "calibration": REFERENCE}))
    assert read_plan_calibration(tmp_path) == REFERENCE
    plan_path(tmp_path).write_text(json.dumps({"cells": {}, "calibration": 3}))
    with pytest.raises(ValueError, match="calibration"):
        read_plan_calibration(tmp_path)
