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
    assert set(figure["method"]) == {"psrs", "queue", "model"} and (figure["truth_ci95"] > 0).all()
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


def test_the_report_says_when_the_truth_is_too_uncertain_to_rank_the_evaluators():
    from bbrl.analysis.replay_study import ranking_note, unrankable_episodes

    def table(half: float) -> pl.DataFrame:
        # Two evaluators of equal variance, one unbiased, one off by 1 against the estimated truth.
        return pl.DataFrame(
            {
                "method": ["a", "b"],
                "episode": [0, 0],
                "runs": [5, 5],
                "truth": [10.0, 10.0],
                "truth_ci95": [half, half],
                "bias": [0.0, 1.0],
                "variance": [2.0, 2.0],
            }
        )

    # Within +-0.1 of the truth, a's MSE stays below b's; within +-1, b's can be the smaller.
    assert unrankable_episodes(table(0.1)) == [] and ranking_note(table(0.1)) == ""
    assert unrankable_episodes(table(1.0)) == [0]
    assert "too wide to rank the evaluators by MSE at 1 of 1 episodes" in ranking_note(table(1.0))
