"""``bbrl value-error references``."""

from __future__ import annotations

import pytest

from bbrl import value_error as ve
from bbrl.cli import main


def test_references_command_writes_a_loadable_file(tmp_path, capsys):
    out = tmp_path / "refs.parquet"
    argv = ["value-error", "references", "--env", "mountain-car", "--states", "4", "--epsilon", "0.3"]
    assert main([*argv, "--delta", "0.1", "--k", "5", "--seed", "2", "--out", str(out)]) == 0
    refs = ve.References.load(out)
    assert refs.m == 4 and refs.certified
    assert (refs.params["epsilon"], refs.params["k"], refs.params["seed"]) == (0.3, 5, 2)
    assert refs.params["policy_random_share"] == 0.6 and refs.params["env_discount"] == 0.99
    assert "guaranteed CMAPVE error" in capsys.readouterr().out


def test_references_command_errors(tmp_path, capsys):
    base = ["value-error", "references", "--env", "puddle-world", "--states"]
    assert main([*base, "2", "--out", str(tmp_path / "missing" / "r.parquet")]) == 2
    with pytest.raises(SystemExit) as refused:  # argparse's usage error, before any work
        main([*base, "0", "--out", str(tmp_path / "r.parquet")])
    assert refused.value.code == 2
    assert main([*base, "2", "--tau", "0", "--out", str(tmp_path / "r.parquet")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "tau = 0" in err and "argument --states: must be >= 1, got 0" in err
    assert not (tmp_path / "r.parquet").exists()


def test_references_refuse_a_run_above_the_budget_unless_forced(tmp_path, capsys):
    # epsilon = delta = 0.01 with k = 1000 asks for m = 257,985 states at eps_bar = 0.00125.
    argv = ["value-error", "references", "--env", "mountain-car", "--epsilon", "0.01", "--delta", "0.01"]
    assert main([*argv, "--k", "1000", "--out", str(tmp_path / "r")]) == 2
    captured = capsys.readouterr()
    assert "expected cost: about" in captured.out and "257985 states" in captured.out
    assert "exceed --budget" in captured.err and "--force" in captured.err
    assert not (tmp_path / "r" / "references.parquet").exists()


def test_references_with_fewer_states_than_algorithm_one_name_the_m_needed(tmp_path, capsys):
    argv = ["value-error", "references", "--env", "mountain-car", "--states", "3", "--epsilon", "0.3"]
    assert main([*argv, "--rule", "ebgstop", "--v-max", "100", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"needs m = {ve.sample_size(0.3, 0.1, 1.0, 1)} states" in out
    refs = ve.References.load(tmp_path / "references.parquet")
    assert refs.params["rule"] == "ebgstop" and refs.params["value_range"] == 100.0
    assert refs.params["value_low"] == -101.0  # the range anchored at the highest return, -1


def test_states_command_certifies_each_state(tmp_path, capsys):
    import polars as pl

    argv = ["value-error", "states", "--env", "puddle-world", "--states", "3", "--epsilon", "0.3"]
    assert main([*argv, "--v-max", "8000", "--threads", "1", "--out", str(tmp_path)]) == 0
    frame = pl.read_parquet(tmp_path / "states.parquet")
    assert frame.height == 3 and set(frame["reason"]) <= {"relative", "absolute"}
    assert frame["param.value_range"][0] == 8000.0 and frame["param.rule"][0] == "betting"
    assert frame["param.bets"][0] == "aimed"
    assert "returns per state median" in capsys.readouterr().out
    # The anytime bets need at least as many returns on the same states and returns here.
    anytime = tmp_path / "anytime"
    assert main([*argv, "--v-max", "8000", "--threads", "1", "--bets", "anytime", "--out", str(anytime)]) == 0
    other = pl.read_parquet(anytime / "states.parquet")
    assert other["param.bets"][0] == "anytime" and other["n_samples"].sum() > frame["n_samples"].sum()


def test_study_writes_its_report(tmp_path, capsys):
    argv = ["value-error", "study", "--states", "3", "--domains", "mountain-car", "--epsilons", "0.2", "0.1"]
    assert main([*argv, "--deltas", "0.1", "--out", str(tmp_path)]) == 0
    names = {p.name for p in tmp_path.iterdir()}
    assert {"rows.parquet", "summary.csv", "figure1.png", "figure1.svg", "report.md"} <= names
    out = capsys.readouterr().out
    assert "expected about" in out and "[4/4] MountainCar eps 0.1 delta 0.1 betting" in out
    report = (tmp_path / "report.md").read_text()
    assert "| MountainCar | 0.1 | 0.1 | betting | 3 |" in report and "Machine: " in report
    assert "machine: machine" not in report.lower()  # the machine named once


def test_undiscounted_references_run_to_termination_or_name_the_cap(tmp_path, capsys):
    argv = ["value-error", "references", "--env", "mountain-car", "--gamma", "1", "--states", "2", "--epsilon", "0.3"]
    assert main([*argv, "--max-rollout-steps", "4000", "--out", str(tmp_path / "ok")]) == 0
    assert "every rollout ran to termination, within the 4000-step cap" in capsys.readouterr().out
    refs = ve.References.load(tmp_path / "ok" / "references.parquet")
    assert refs.params["to_termination"] and refs.params["value_range"] == 3999.0
    # A cap far below Mountain Car's episodes: refused by default, accepted on request.
    assert main([*argv, "--max-rollout-steps", "3", "--out", str(tmp_path / "short")]) == 2
    assert "max_rollout_steps = 3 steps" in capsys.readouterr().err
    assert not (tmp_path / "short" / "references.parquet").exists()
    assert main([*argv, "--max-rollout-steps", "3", "--accept-truncated", "--out", str(tmp_path / "cut")]) == 0
    assert "reached the 3-step cap before their episode ended (2 states)" in capsys.readouterr().out
    # The cap is refused where Lemma 5 sets the length.
    discounted = ["value-error", "references", "--env", "mountain-car", "--states", "2", "--max-rollout-steps", "9"]
    assert main([*discounted, "--out", str(tmp_path / "d")]) == 2
    assert "caps rollouts that run to termination" in capsys.readouterr().err
