"""SBOSS, PSRL and the Optimal oracle through the public API."""

from __future__ import annotations

import numpy as np
import pytest

import bbrl
from bbrl import agents


@pytest.mark.parametrize(
    "spec",
    [
        agents.BAMCP(k=50, depth=10),
        agents.BFS3(k=10, c=2, depth=5),
        agents.SBOSS(1e-3, 7.0),
        agents.SBOSS(1e-3, 7.0, compat=True),
        agents.PSRL(),
        agents.PSRL(k=3),
        agents.Optimal(),
    ],
    ids=lambda s: s.label,
)
def test_runs_are_deterministic_across_thread_counts(spec: agents.AgentSpec) -> None:
    exp = bbrl.Experiment("GDL", n_mdps=12, horizon=60, seed=3)
    one = exp.run(spec, threads=1)
    two = exp.run(spec, threads=2)
    assert np.array_equal(one.returns, two.returns)


def test_optimal_is_an_upper_reference() -> None:
    exp = bbrl.Experiment("GC", n_mdps=100, horizon=250, seed=0)
    optimal = exp.run(agents.Optimal())
    for spec in (agents.Random(), agents.EGreedy(0.0), agents.PSRL(), agents.BAMCP(k=100, depth=10)):
        assert optimal.mean > exp.run(spec).mean


def test_optimal_cannot_be_stepped_by_hand() -> None:
    with pytest.raises(ValueError, match="oracle: it must be shown the true MDP"):
        bbrl.Stepper(agents.Optimal(), prior="GC")


@pytest.mark.parametrize(
    ("factory", "match"),
    [
        (lambda: agents.SBOSS(0.0, 1.0), "epsilon must be > 0"),
        (lambda: agents.SBOSS(1e-3, -1.0), "delta must be >= 0"),
        (lambda: agents.PSRL(k=0), "k must be >= 1"),
        (lambda: agents.BAMCP(k=0, depth=15), "k must be >= 1"),
        (lambda: agents.BAMCP(k=10, depth=0), "depth must be >= 1"),
        (lambda: agents.BFS3(k=10, c=0, depth=5), "c must be >= 1"),
        (lambda: agents.BFS3(k=10.5, c=2, depth=5), "k must be an int"),
        (lambda: agents.PSRL(k=1.5), "k must be an int"),
    ],
)
def test_bad_parameters(factory, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError), match=match):
        factory()


def test_psrl_mixture_probabilities() -> None:
    core = bbrl.Stepper(agents.PSRL(k=4), prior="UGC", gamma=0.95, horizon=50, seed=1)
    p = core.action_probabilities(0)
    assert p.sum() == pytest.approx(1.0) and np.all(np.isin(np.round(p * 8), np.arange(9)))
