"""The protocol: contract, exact expectations, determinism, pairing and bad input."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import bbrl
from bbrl import agents, distributions, kernels


def test_public_contract() -> None:
    gc = distributions.generalized_chain()
    exp = bbrl.Experiment(gc, n_mdps=50, gamma=0.95, horizon=250, seed=0)
    run = exp.run(agents.EGreedy(epsilon=0.0), prior=gc.uniform(), threads=None)
    assert run.returns.dtype == np.float64 and run.returns.shape == (50,)
    assert run.online_seconds.dtype == np.float64 and run.online_seconds.shape == (50,)
    assert np.all(run.online_seconds > 0)
    assert isinstance(run.offline_seconds, float) and run.offline_seconds >= 0
    assert run.mean == pytest.approx(run.returns.mean())
    expected_ci = 1.96 * run.returns.std(ddof=1) / math.sqrt(50)
    assert run.ci95 == pytest.approx(expected_ci, rel=1e-12)
    frame = run.to_polars()
    assert isinstance(frame, pl.DataFrame) and frame.height == 50
    assert frame["mdp"].to_list() == list(range(50))
    assert np.array_equal(frame["return"].to_numpy(), run.returns)
    assert run.prior == "UGC" and run.experiment == "GC" and run.agent == "e-Greedy (epsilon=0.0)"
    assert "e-Greedy" in str(run)


def test_default_horizon_follows_the_papers_formula() -> None:
    assert bbrl.Experiment("GDL", n_mdps=1).horizon == 161
    assert bbrl.Experiment("GC", n_mdps=1, horizon=250).horizon == 250


@pytest.mark.parametrize("problem", ["GC", "GDL", "Grid"])
def test_random_matches_the_exact_expectation(problem: str) -> None:
    """The mean return of Random equals the mean of the exact per-MDP expectations (policy
    evaluation over T steps) within the run's 95% interval."""
    fdm = distributions.get(problem)
    exp = bbrl.Experiment(fdm, n_mdps=500, gamma=0.95, horizon=250, seed=3)
    run = exp.run(agents.Random())
    uniform = np.full((fdm.n_states, fdm.n_actions), 1.0 / fdm.n_actions)
    exact = np.array(
        [kernels.evaluate_policy(exp.transitions(i), fdm.rewards, uniform, 0.95, 250)[0] for i in range(500)]
    )
    assert abs(run.mean - exact.mean()) <= run.ci95


def test_results_are_identical_whatever_the_thread_count() -> None:
    exp = bbrl.Experiment("GC", n_mdps=60, horizon=100, seed=7)
    for agent in (agents.Random(), agents.EGreedy(0.2), agents.SoftMax(0.5), agents.BEB(1.0)):
        one = exp.run(agent, prior="UGC", threads=1)
        two = exp.run(agent, prior="UGC", threads=2)
        every = exp.run(agent, prior="UGC", threads=None)
        assert np.array_equal(one.returns, two.returns)
        assert np.array_equal(one.returns, every.returns)


def test_same_seed_same_mdps_and_results() -> None:
    a = bbrl.Experiment("Grid", n_mdps=5, horizon=50, seed=11)
    b = bbrl.Experiment("Grid", n_mdps=5, horizon=50, seed=11)
    c = bbrl.Experiment("Grid", n_mdps=5, horizon=50, seed=12)
    assert all(np.array_equal(a.transitions(i), b.transitions(i)) for i in range(5))
    assert not np.array_equal(a.transitions(0), c.transitions(0))
    assert np.array_equal(a.run(agents.EGreedy(0.3)).returns, b.run(agents.EGreedy(0.3)).returns)


def test_mdps_are_drawn_from_the_test_distribution() -> None:
    gc = distributions.get("GC")
    exp = bbrl.Experiment(gc, n_mdps=400, seed=1)
    P = np.stack([exp.transitions(i) for i in range(400)])
    assert np.all(P[:, gc.theta == 0] == 0)
    # Dir(1, 1) marginals: mean 1/2, sd 1/sqrt(12); 5 standard errors of the mean.
    p_forward = P[:, 0, 0, 1]
    assert abs(p_forward.mean() - 0.5) < 5 * math.sqrt(1 / 12 / 400)


def test_softmax_compat_always_plays_action_zero() -> None:
    """The original's unnormalised soft-max plays action 0 whatever tau (SPEC 4.4): on Grid that is
    'left' from the corner, a self-loop, hence the paper's score of 0."""
    exp = bbrl.Experiment("Grid", n_mdps=20, horizon=250, seed=0)
    for tau in (0.05, 1.0, 25.0):
        assert np.all(exp.run(agents.SoftMax(tau, compat=True)).returns == 0.0)
    assert exp.run(agents.SoftMax(1.0)).returns.max() > 0.0


def test_beb_compat_truncates_beta() -> None:
    exp = bbrl.Experiment("GC", n_mdps=30, horizon=100, seed=2)
    truncated = exp.run(agents.BEB(0.5, compat=True)).returns
    assert np.array_equal(truncated, exp.run(agents.BEB(0.0)).returns)
    assert np.array_equal(exp.run(agents.BEB(2.5, compat=True)).returns, exp.run(agents.BEB(2.0)).returns)
    assert not np.array_equal(exp.run(agents.BEB(2.5)).returns, exp.run(agents.BEB(2.0)).returns)


def test_progress_bar_path_gives_the_same_results() -> None:
    exp = bbrl.Experiment("GDL", n_mdps=20, horizon=50, seed=4)
    assert np.array_equal(exp.run(agents.BEB(1.0), progress=True).returns, exp.run(agents.BEB(1.0)).returns)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_mdps": 0}, ValueError, "n_mdps must be >= 1"),
        ({"n_mdps": 2.5}, TypeError, "n_mdps must be an int"),
        ({"gamma": 1.0}, ValueError, "gamma"),
        ({"gamma": -0.1}, ValueError, "gamma"),
        ({"gamma": float("nan")}, ValueError, "gamma"),
        ({"horizon": 0}, ValueError, "horizon must be >= 1"),
        ({"seed": -1}, ValueError, "seed"),
        ({"seed": 2**64}, ValueError, "seed"),
    ],
)
def test_experiment_bad_input(kwargs: dict, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        bbrl.Experiment("GC", **kwargs)


def test_run_bad_input() -> None:
    exp = bbrl.Experiment("GC", n_mdps=2, horizon=5)
    with pytest.raises(ValueError, match="prior 'GDL' has 9 states and 2 actions"):
        exp.run(agents.Random(), prior="GDL")
    with pytest.raises(ValueError, match="threads must be >= 1"):
        exp.run(agents.Random(), threads=0)
    with pytest.raises(TypeError, match="agent must be"):
        exp.run("random")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="test must be"):
        bbrl.Experiment(42)  # type: ignore[arg-type]


def test_single_mdp_has_no_interval() -> None:
    run = bbrl.Experiment("GC", n_mdps=1, horizon=5).run(agents.Random())
    assert math.isnan(run.ci95)


def test_the_fingerprint_of_a_document_is_stable_and_names_every_setting() -> None:
    from bbrl.protocol import fingerprint

    # Canonical JSON: key order and spacing do not matter, any value does; the digest is pinned.
    assert fingerprint.document_fingerprint({"b": [1, 2.5], "a": None}) == fingerprint.document_fingerprint(
        {"a": None, "b": [1, 2.5]}
    )
    assert fingerprint.document_fingerprint({"a": 1}) == "015abd7f5cc57a2d"
    assert fingerprint.document_fingerprint({"a": 1}) != fingerprint.document_fingerprint({"a": 1.5})
    with pytest.raises(ValueError, match="cannot fingerprint"):
        fingerprint.document_fingerprint({"a": math.nan})
    gc = distributions.get("GC")
    base = bbrl.Experiment(gc, n_mdps=3, gamma=0.95, horizon=10, seed=0)
    assert len(base.fingerprint) == 16
    assert base.fingerprint == fingerprint.experiment_fingerprint(gc.to_document(), 3, 0.95, 10, 0)
    # The test distribution's names do not change its MDPs: a renamed experiment has the same print.
    assert bbrl.Experiment(gc, n_mdps=3, gamma=0.95, horizon=10, seed=0, name="other").fingerprint == base.fingerprint
    others = [
        bbrl.Experiment("GDL", n_mdps=3, gamma=0.95, horizon=10, seed=0),
        bbrl.Experiment(gc.uniform(), n_mdps=3, gamma=0.95, horizon=10, seed=0),
        bbrl.Experiment(gc, n_mdps=4, gamma=0.95, horizon=10, seed=0),
        bbrl.Experiment(gc, n_mdps=3, gamma=0.9, horizon=10, seed=0),
        bbrl.Experiment(gc, n_mdps=3, gamma=0.95, horizon=11, seed=0),
        bbrl.Experiment(gc, n_mdps=3, gamma=0.95, horizon=10, seed=1),
    ]
    assert len({base.fingerprint, *(e.fingerprint for e in others)}) == 7
    run = base.run(agents.Random(), threads=1)
    assert run.fingerprint == base.fingerprint
    assert run.to_polars()["experiment_fingerprint"].to_list() == [base.fingerprint] * 3
