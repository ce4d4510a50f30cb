"""The report's hardness section: each problem of a results folder measured, the section and its table
(tests/analysis/test_stats_and_report.py checks that the report holds it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from bbrl import distributions, envs, grid
from bbrl.analysis.hardness import CSV_FILE, MEASURES, hardness_frame, hardness_section
from bbrl.protocol.schema import Col

# A grid with an environment used as a distribution and a built-in distribution: the two kinds of
# problem the section measures differently.
GRID = """\
[defaults]
n_mdps = 2
horizon = 5

[[experiment]]
name = "lake"
test = "FrozenLake-4x4"

[[experiment]]
name = "GDL"
test = "GDL"

[[agent]]
kind = "random"

[[agent]]
kind = "optimal"
"""


def test_each_problem_is_measured_as_the_docs_say() -> None:
    cells = pl.DataFrame({Col.TEST: ["FrozenLake-4x4", "GC", "GC", "my-file"]})
    frame = hardness_frame(cells)
    assert frame["problem"].to_list() == ["FrozenLake-4x4", "GC", "my-file"]
    lake = frame.row(0, named=True)
    assert lake["measured"] == "the environment"
    expected = envs.make("FrozenLake-4x4").hardness()
    assert lake["states"] == expected["n_states"]
    for key, _ in MEASURES:
        assert lake[key] == expected[key], key
    # GC has no single MDP: its mean MDP, built here independently of the module.
    gc = distributions.get("GC")
    mean = gc.theta / gc.theta.sum(axis=2, keepdims=True)
    start = np.eye(gc.n_states)[gc.initial_state]
    by_hand = envs.FiniteEnv(mean, gc.rewards, start, 0.9).hardness()
    row = frame.row(1, named=True)
    assert row["measured"] == "the distribution's mean MDP"
    for key, _ in MEASURES:
        assert row[key] == by_hand[key], key
    assert (
        frame.row(2, named=True)["measured"].startswith("not measured") and frame.row(2, named=True)["diameter"] is None
    )


def test_the_section_is_written_with_its_table(tmp_path: Path) -> None:
    # An environment used as a distribution in a grid: the test column holds its registry name.
    config = grid.parse_config(GRID)
    assert [e.test_fdm.name for e in config.experiments] == ["FrozenLake-4x4", "GDL"]
    cells = pl.DataFrame({Col.TEST: [e.test_fdm.name for e in config.experiments]})
    section = hardness_section(cells, tmp_path)
    assert section.id == "hardness" and section.title == "Problem hardness"
    assert "<td>FrozenLake-4x4</td>" in section.notes_html
    table = pl.read_csv(tmp_path / CSV_FILE)
    assert table["problem"].to_list() == ["FrozenLake-4x4", "GDL"]
    assert table["diameter"][0] == envs.make("FrozenLake-4x4").hardness()["diameter"]
