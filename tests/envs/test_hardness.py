"""The hardness measures of the core against an independent computation: policy iteration with
dense linear solves for the discounted values, and value iteration on the hitting times for the
diameter, where the core runs policy iteration with sparse eliminations for both."""

from __future__ import annotations

import numpy as np
import pytest

from bbrl import envs

GAMMA = 0.99
ZERO_GAP = 1e-9


def continuing(env: envs.FiniteEnv) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The continuing form restricted to the states reachable from the start law, from the
    episodic tables: P, the expected rewards r(s, a), and the kept states."""
    P, R, mu, terminal = env.transitions, env.rewards, env.start_law, env.terminal_states
    r = np.einsum("say,say->sa", P, R)
    Pc = P * ~terminal[None, None, :]
    Pc = Pc + (P * terminal[None, None, :]).sum(axis=2, keepdims=True) * mu[None, None, :]
    Pc[terminal] = P[terminal]
    reach = mu > 0
    edges = Pc.sum(axis=1) > 0
    while True:
        grown = reach | (edges[reach].any(axis=0))
        if (grown == reach).all():
            break
        reach = grown
    keep = np.flatnonzero(reach)
    return Pc[np.ix_(keep, np.arange(env.n_actions), keep)], r[keep], keep


def optimal(P: np.ndarray, r: np.ndarray) -> np.ndarray:
    n = P.shape[0]
    policy = np.zeros(n, dtype=int)
    rows = np.arange(n)
    while True:
        v = np.linalg.solve(np.eye(n) - GAMMA * P[rows, policy], r[rows, policy])
        q = r + GAMMA * P @ v
        better = q.max(axis=1) > q[rows, policy] + 1e-12 * max(1.0, np.abs(v).max())
        if not better.any():
            return v
        policy = np.where(better, q.argmax(axis=1), policy)


def diameter_by_value_iteration(P: np.ndarray) -> float:
    """The largest least expected hitting time, every target at once by Jacobi value iteration
    from 0 (H[s, g] rises to the fixed point), stopped when the geometric tail left, estimated
    from the ratio of successive changes, is below 1e-12 relative; inf when the transition graph
    is not strongly connected (the iteration would diverge)."""
    n, k = P.shape[:2]
    edges = P.sum(axis=1) > 0
    reach = edges | np.eye(n, dtype=bool)
    for _ in range(n):
        reach = reach | ((reach.astype(float) @ reach.astype(float)) > 0)
    if not reach.all():
        return np.inf
    H = np.zeros((n, n))
    flat = P.reshape(n * k, n)
    previous = np.inf
    for _ in range(1_000_000):
        new = 1.0 + (flat @ H).reshape(n, k, n).min(axis=1)
        np.fill_diagonal(new, 0.0)
        change = np.abs(new - H).max()
        H = new
        if change == 0:
            return float(H.max())
        ratio = min(change / previous, 1 - 1e-15)
        if np.isfinite(previous) and change * ratio / (1 - ratio) <= 1e-12 * H.max():
            return float(H.max())
        previous = change
    raise AssertionError("value iteration did not converge")


def independent(env: envs.FiniteEnv) -> dict[str, float]:
    P, r, _ = continuing(env)
    v = optimal(P, r)
    q = r + GAMMA * P @ v
    gaps = v[:, None] - q
    gaps[gaps <= ZERO_GAP * max(1.0, np.abs(v).max())] = 0.0
    ev = P @ v
    var = np.einsum("say,say->sa", P, (v[None, None, :] - ev[:, :, None]) ** 2)
    var_c = np.einsum("iaj,iaj->ia", P, (v[None, None, :] - ev.T[None, :, :]) ** 2)
    # Colosseum reports 0 outright for a deterministic MDP (one next state per reachable row).
    deterministic = bool(((P > 0).sum(axis=2) == 1).all())
    return {
        "diameter": diameter_by_value_iteration(P),
        "gap_sum": float((1 / gaps[gaps > 0]).sum()),
        "gap_sum_colosseum": float((1 / (gaps + 0.1)).sum()),
        "value_norm": float(np.sqrt(var.max())),
        "value_norm_colosseum": 0.0 if deterministic else float(np.sqrt(var_c.max())),
        "n_states": P.shape[0],
    }


PROBLEMS = [
    ("RiverSwim-Osband", {}),
    ("RiverSwim-Strehl", {}),
    ("SixArms", {}),
    ("Chain", {}),
    ("DoubleLoop", {}),
    ("FrozenLake-4x4", {}),
    ("CliffWalking", {}),
    ("DeepSea-Stochastic", {"size": 5}),
    ("StochasticChain", {"size": 6}),
]


@pytest.mark.parametrize(("name", "options"), PROBLEMS)
def test_measures_agree_with_an_independent_computation(name: str, options: dict) -> None:
    env = envs.make(name, **options)
    core = env.hardness()
    ref = independent(env)
    assert core["n_states"] == ref["n_states"]
    for key in ("diameter", "gap_sum", "gap_sum_colosseum", "value_norm", "value_norm_colosseum"):
        assert core[key] == pytest.approx(ref[key], rel=1e-9, abs=1e-9), key


def test_reference_values_and_the_infinite_diameter() -> None:
    h = envs.make("RiverSwim-Osband").hardness()
    assert h["diameter"] == pytest.approx(14.7223, abs=1e-4)
    assert h["gap_sum_colosseum"] == pytest.approx(65.198, abs=1e-3)
    assert envs.make("SixArms").hardness()["diameter"] == pytest.approx(101.0, abs=1e-9)
    # A state that cannot be left: not communicating.
    P = np.array([[[0.5, 0.5]], [[0.0, 1.0]]])
    env = envs.FiniteEnv(P, np.zeros_like(P), [1.0, 0.0], 0.9)
    assert env.hardness()["diameter"] == np.inf
    # Deterministic DeepSea: every reachable cell is reached again after the reset.
    assert envs.make("DeepSea", size=4).hardness()["diameter"] < np.inf


def test_colosseums_value_norm_is_zero_on_deterministic_mdps_as_colosseum_reports_it() -> None:
    # Colosseum's BaseMDP.discounted_value_norm: 0 when every transition and reward is
    # deterministic, before its formula (which gave 0.904 on DeepSea-10 and 1.608 on DoubleLoop).
    for name, options in (("DeepSea", {"size": 10}), ("DoubleLoop", {}), ("CliffWalking", {})):
        h = envs.make(name, **options).hardness()
        assert h["value_norm_colosseum"] == 0.0 and h["value_norm"] == 0.0, name
    # A stochastic MDP keeps the formula's value, bit for bit.
    expected = {
        "RiverSwim-Osband": "0x1.5f2c00e3fe0a0p+0",
        "FrozenLake-4x4": "0x1.0b690af7f1d4bp-2",
        "Taxi": "0x1.b5ca681e78200p+0",
    }
    stochastic = {"DeepSea-Stochastic": ({"size": 10}, "0x1.d39e2b37f1a65p-1")}
    for name, value in expected.items():
        assert envs.make(name).hardness()["value_norm_colosseum"] == float.fromhex(value), name
    for name, (options, value) in stochastic.items():
        assert envs.make(name, **options).hardness()["value_norm_colosseum"] == float.fromhex(value), name


def test_bbrl_envs_lists_every_environment(capsys: pytest.CaptureFixture[str]) -> None:
    from bbrl.cli.app import main

    assert main(["envs", "--no-hardness"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in envs.registry.names()) and "hardness" not in listed


def test_bbrl_envs_shows_the_hardness_of_every_finite_environment(capsys: pytest.CaptureFixture[str]) -> None:
    from bbrl.cli.app import main

    assert main(["envs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    finite = [name for name in envs.registry.names() if envs.registry.entry(name)["state_space"] == "finite"]
    # Each finite environment's entry is followed (its entry may wrap) by its hardness line.
    for name in finite:
        at = next(i for i, line in enumerate(lines) if line.startswith(f"{name} ("))
        following = next(line for line in lines[at + 1 :] if line.startswith("    hardness: "))
        assert following == next(line for line in lines[at + 1 :] if line.startswith("    ")), name
        assert "diameter" in following and "value norm" in following
    assert sum(line.startswith("    hardness: ") for line in lines) == len(finite)
    # Taxi's start law over 300 states is summarised, not printed.
    assert "start law uniform over 300 states" in " ".join(lines)
