"""The replay study's report folder, on a tiny configuration: its files, the MSE split, the reach
share, and the same numbers for the same seed."""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from bbrl.analysis.replay_study import StudyConfig, run_study

TINY = StudyConfig(
    six_arms_logs=3, six_arms_episodes=4, truth_runs=40, river_sizes=(40,), river_runs=2, river_ks=(10,), max_steps=200
)


def test_the_study_writes_a_reproducible_report(tmp_path):
    report = run_study(tmp_path / "a", TINY, seed=1, threads=1)
    folder = report.parent
    for name in ("README.md", "figure2a.csv", "figure2a.png", "figure2a.svg", "riverswim.csv", "summary.json"):
        assert (folder / name).is_file(), name
    figure = pl.read_csv(folder / "figure2a.csv")
    assert set(figure["method"]) == {"psrs", "queue", "model"}
    reached = figure.filter(pl.col("runs") > 0)
    np.testing.assert_allclose(reached["mse"], reached["bias"] ** 2 + reached["variance"], rtol=1e-9, atol=1e-9)
    assert figure.filter(pl.col("method") == "model")["reach"].to_list() == [1.0] * 4
    river = pl.read_csv(folder / "riverswim.csv")
    assert river.height == 5 and river["episodes_max"].max() <= 40
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["seed"] == 1 and "log j: Dataset.collect(seed=1 * 10**6 + j)" in summary["figure2a"]["log_seeds"]
    assert "truth" in summary["figure2a"] and "machine:" in summary["machine"]
    again = run_study(tmp_path / "b", TINY, seed=1, threads=2).parent
    assert (again / "figure2a.csv").read_bytes() == (folder / "figure2a.csv").read_bytes()
    assert (again / "riverswim.csv").read_bytes() == (folder / "riverswim.csv").read_bytes()
