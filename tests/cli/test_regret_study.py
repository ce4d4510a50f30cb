"""``bbrl regret-study``: the quick study's files, agents and panels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bbrl import agents, problems, smoke
from bbrl.cli import main
from bbrl.episodic import read_results
from bbrl.episodic.study import BAYESIAN_KINDS, DEEP_SEA, StudyConfig, baseline_kinds, deep_sea, study_agents


def test_quick_study_writes_its_report_with_every_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # At smoke-test sizes (bbrl.smoke): the whole study, every agent, file and panel, in seconds.
    monkeypatch.setenv("BBRL_SMOKE", "1")
    out = tmp_path / "study"
    assert main(["regret-study", "--quick", "--out", str(out), "--threads", "2"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    quick = StudyConfig.quick()
    assert summary["config"]["runs"] == smoke.N_MDPS and summary["config"]["episodes"] == smoke.EPISODES
    assert summary["config"]["deep_sea_sizes"] == [quick.deep_sea_sizes[0]]
    assert summary["config"]["deep_sea_episodes"] == smoke.EPISODES
    assert "smoke-test sizes" in capsys.readouterr().err
    for name in ("README.md", "riverswim-regret.csv", "riverswim-regret.png", "riverswim-regret.svg", "summary.json"):
        assert (out / name).is_file(), name
    frame, settings = read_results(out / "riverswim")
    assert settings["problem"] == "RiverSwim-Osband" and settings["horizon"] == 20
    assert (settings["runs"], settings["episodes"]) == (smoke.N_MDPS, smoke.EPISODES)
    # PSRL, the Bayes-adaptive planners and every kind registered as an episodic baseline.
    expected = {agent.label for agent in study_agents(BAYESIAN_KINDS + baseline_kinds(), 20)}
    assert set(frame["agent"].unique()) == expected
    assert baseline_kinds(), "at least the e-greedy floor declares itself an episodic baseline"
    report = (out / "README.md").read_text()
    printed = capsys.readouterr().out
    if DEEP_SEA in problems.names_of():
        assert (out / "deepsea-scaling.png").is_file() and "deepsea-scaling.png" in report
    else:
        assert "DeepSea scaling panel is skipped" in report and "DeepSea scaling panel is skipped" in printed


def test_a_file_name_for_out_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["regret-study", "--quick", "--out", str(tmp_path / "x.csv")]) == 2
    assert "expected a folder" in capsys.readouterr().err


@pytest.mark.skipif(DEEP_SEA not in problems.names_of(), reason="the problem registry has no DeepSea")
def test_psrl_learns_a_small_deep_sea() -> None:
    table = deep_sea(StudyConfig(deep_sea_sizes=(4,), deep_sea_episodes=80, deep_sea_runs=2), seed=0, threads=1)
    psrl = table.filter(table["agent"] == agents.examples("psrl")[0].label)
    assert psrl["learning_episode_mean"][0] < 80


def test_smoke_sizes_leave_the_study_unchanged_without_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BBRL_SMOKE", raising=False)
    assert StudyConfig().smoke_sized() == StudyConfig()
    monkeypatch.setenv("BBRL_SMOKE", "1")
    small = StudyConfig().smoke_sized()
    assert (small.runs, small.episodes, small.deep_sea_runs) == (smoke.N_MDPS, smoke.EPISODES, smoke.N_MDPS)
    assert small.deep_sea_sizes == StudyConfig().deep_sea_sizes[:1] and small.planners
