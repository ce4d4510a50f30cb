"""The exploration problems (DeepSea, Double Loop, FrozenLake, CliffWalking, Taxi, the stochastic
chain) against their references: Gymnasium's tables, bsuite's mapping and step rule, TabulaRL's
definition, and the optimal values computed independently (float64 backward induction)."""

from __future__ import annotations

import pickle
from typing import ClassVar

import numpy as np
import pytest
from packaging.version import Version
from scipy import stats

import bbrl
from bbrl import agents, distributions, envs
from bbrl.episodic import EpisodicExperiment

ALPHA = 1e-6


def episodic_optimum(env: envs.FiniteEnv) -> np.ndarray:
    """V*_0 by backward induction over the time limit, written here from the tables (terminal
    states are absorbing with reward 0, so an ended episode earns nothing more)."""
    r = np.einsum("say,say->sa", env.transitions, env.rewards)
    v = np.zeros(env.n_states)
    for _ in range(env.time_limit or 0):
        v = (r + env.discount * env.transitions @ v).max(axis=1)
    return v


# -- DeepSea ------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [5, 10, 20])
@pytest.mark.parametrize("seed", range(10))
def test_deep_sea_mapping_is_numpys_legacy_binomial(size: int, seed: int) -> None:
    expected = np.random.RandomState(seed).binomial(1, 0.5, (size, size))
    np.testing.assert_array_equal(envs.deep_sea_mapping(size, seed), expected)


def test_deep_sea_mapping_literals_for_bsuites_seed() -> None:
    # bsuite's sweep uses mapping seed 42; the first rows at N = 10.
    m = envs.deep_sea_mapping(10, 42)
    assert m[0].tolist() == [0, 1, 1, 1, 0, 0, 0, 1, 1, 1]
    assert m[1].tolist() == [0, 1, 1, 0, 0, 0, 0, 1, 0, 0]
    assert m[2].tolist() == [1, 0, 0, 0, 0, 1, 0, 1, 1, 0]
    with pytest.raises(ValueError, match="mapping_seed"):
        envs.deep_sea_mapping(5, 2**32)


class BsuiteDeepSea:
    """A minimal port of bsuite's ``DeepSea._step`` (``bsuite/environments/deep_sea.py``), kept
    to its step order: reward for a right move at the last column, the corners' N(0, 1) noise,
    the move (failing with probability 1/N when stochastic), its cost, then the next row."""

    def __init__(self, size: int, mapping: np.ndarray, stochastic: bool, seed: int) -> None:
        self.size, self.mapping, self.stochastic = size, mapping, stochastic
        self.rng = np.random.RandomState(seed)

    def step(self, row: int, col: int, action: int) -> tuple[int, int, float]:
        n = self.size
        reward = 0.0
        right = action == self.mapping[row, col]
        if col == n - 1 and right:
            reward += 1.0
        if self.stochastic and row == n - 1 and col in (0, n - 1):
            reward += self.rng.randn()
        if right:
            if not self.stochastic or self.rng.rand() > 1.0 / n:
                col = min(col + 1, n - 1)
            reward -= 0.01 / n
        else:
            col = max(col - 1, 0)
        return row + 1, col, reward


@pytest.mark.parametrize("stochastic", [False, True])
def test_deep_sea_tables_match_bsuites_step(stochastic: bool) -> None:
    n, seed = 6, 42
    name = "DeepSea-Stochastic" if stochastic else "DeepSea"
    env = envs.make(name, size=n, mapping_seed=seed)
    assert (env.n_states, env.n_actions, env.time_limit) == (n * n + 1, 2, n)
    ref = BsuiteDeepSea(n, envs.deep_sea_mapping(n, seed), stochastic, seed=1)
    end = n * n
    for row in range(n):
        for col in range(row + 1):
            s = row * n + col
            for a in range(2):
                outcomes = [ref.step(row, col, a) for _ in range(200)]
                states = [end if r2 == n else r2 * n + c2 for r2, c2, _ in outcomes]
                support = np.flatnonzero(env.transitions[s, a] > 0)
                if len(support) == 1:
                    assert set(states) == {support[0]}, (s, a)
                else:
                    counts = np.array([states.count(y) for y in support])
                    assert counts.sum() == 200, (s, a)
                    assert stats.chisquare(counts, env.transitions[s, a, support] * 200).pvalue > ALPHA, (s, a)
                mean_reward = env.rewards[s, a, states[0]]
                if env.reward_noise[s, a] == 0:
                    assert all(r == pytest.approx(mean_reward, abs=1e-15) for *_, r in outcomes), (s, a)
                else:
                    rewards = np.array([r for *_, r in outcomes]) - mean_reward
                    assert stats.kstest(rewards, "norm").pvalue > ALPHA, (s, a)
    assert env.terminal_states.tolist() == [False] * end + [True]


@pytest.mark.parametrize(
    ("size", "stochastic", "optimum"),
    [(10, False, 0.99), (20, False, 0.99), (10, True, 0.380907), (20, True, 0.370938)],
)
def test_deep_sea_optimal_values(size: int, stochastic: bool, optimum: float) -> None:
    env = envs.make("DeepSea-Stochastic" if stochastic else "DeepSea", size=size)
    assert episodic_optimum(env)[0] == pytest.approx(optimum, abs=5e-7)
    np.testing.assert_allclose(env.optimal_values(), episodic_optimum(env), rtol=0, atol=1e-12)


def test_reward_noise_is_gaussian_with_the_stated_deviation() -> None:
    # The stochastic chain: N(0, 1) for left at state 0, N(1, 1) for right at the far end; none elsewhere.
    env = envs.make("StochasticChain", size=10)
    assert env.reward_noise[0, 0] == 1.0 and env.reward_noise[9, 1] == 1.0 and env.reward_noise.sum() == 2.0
    env.reset(seed=4)
    samples = []
    for _ in range(2000):
        env._core.reset(None, 0)
        samples.append(env.step(0)[1])
    assert stats.kstest(samples, "norm").pvalue > ALPHA
    # DeepSea-Stochastic's bottom-left corner, reached by going left all the way down.
    sea = envs.make("DeepSea-Stochastic", size=4)
    mapping = envs.deep_sea_mapping(4, 42)
    sea.reset(seed=9)
    corner = []
    for _ in range(2000):
        assert sea._core.reset(None, 0) == 0
        for row in range(4):
            s2, r, terminal, _ = sea.step(1 - int(mapping[row, 0]))
            assert terminal == (row == 3) and s2 == (16 if row == 3 else (row + 1) * 4)
        corner.append(r)
    assert stats.kstest(corner, "norm").pvalue > ALPHA
    assert sea.reward_bounds == (-np.inf, np.inf)


def test_stochastic_chain_is_tabularls() -> None:
    length = 10
    env = envs.make("StochasticChain", size=length)
    P = np.zeros((length, 2, length))
    for s in range(length):
        P[s, 0, max(0, s - 1)] = 1.0
        P[s, 1, min(length - 1, s + 1)] = 1.0 - 1.0 / length
        P[s, 1, max(0, s - 1)] += 1.0 / length
    np.testing.assert_allclose(env.transitions, P, rtol=0, atol=1e-15)
    assert (env.time_limit, env.discount) == (length, 1.0)
    assert episodic_optimum(env)[0] == pytest.approx(0.387420, abs=5e-7)


def test_double_loop_is_strens() -> None:
    env = envs.make("DoubleLoop")
    nxt = {(s, a): int(np.flatnonzero(env.transitions[s, a])[0]) for s in range(9) for a in range(2)}
    assert nxt[0, 0] == 1 and nxt[0, 1] == 5
    assert [nxt[s, a] for s in (1, 2, 3, 4) for a in (0, 1)] == [2, 2, 3, 3, 4, 4, 0, 0]
    assert [nxt[s, 1] for s in (5, 6, 7, 8)] == [6, 7, 8, 0]
    assert [nxt[s, 0] for s in (5, 6, 7, 8)] == [0, 0, 0, 0]
    assert env.rewards[4, :, 0].tolist() == [1.0, 1.0] and env.rewards[8, :, 0].tolist() == [2.0, 2.0]
    # Action 1 throughout is optimal: 2 every 5 steps from state 0, (I - gamma P) v = r solved exactly.
    policy = np.zeros((9, 2))
    policy[:, 1] = 1.0
    np.testing.assert_allclose(env.optimal_values(), env.policy_values(policy), rtol=1e-9)
    g = env.discount
    assert env.policy_values(policy)[0] == pytest.approx(2 * g**4 / (1 - g**5), rel=1e-12)


# -- Gymnasium toy text -------------------------------------------------------------------------

gym = pytest.importorskip("gymnasium", reason="the golden tables come from gymnasium (the gym extra)")

#: The Gymnasium releases whose slippery FrozenLake bbrl's is bit for bit: 1.2.1 made the side moves
#: ``(1 - success_rate) / 2`` = 0.33333333333333337 (1.2.0 and before: ``1.0 / 3.0`` for all three
#: moves), and 1.2.1 to 1.4.0 build ``P`` that way. A later release is compared once its
#: ``frozen_lake.py`` has been read and this range extended.
SLIPPERY_LAKE_VERSIONS = (Version("1.2.1"), Version("1.5"))


def skip_unless_same_arithmetic(name: str) -> None:
    """Skips the comparison of a slippery FrozenLake with an installed Gymnasium whose side-move
    arithmetic is not the one bbrl reproduces (the other problems are compared with any version)."""
    if not name.startswith("FrozenLake") or name.endswith("NotSlippery"):
        return
    low, high = SLIPPERY_LAKE_VERSIONS
    installed = Version(gym.__version__)
    if not low <= installed < high:
        pytest.skip(
            f"gymnasium {installed}: bbrl's slippery FrozenLake is exactly Gymnasium {low} to before {high} "
            "(side moves (1 - 1/3) / 2; 1.2.0 and before: 1/3); compare with a release of that range"
        )


GYMNASIUM = {
    "FrozenLake-4x4": ("FrozenLake-v1", {}),
    "FrozenLake-4x4-NotSlippery": ("FrozenLake-v1", {"is_slippery": False}),
    "FrozenLake-8x8": ("FrozenLake8x8-v1", {}),
    "FrozenLake-8x8-NotSlippery": ("FrozenLake8x8-v1", {"is_slippery": False}),
    "CliffWalking": ("CliffWalking-v1", {}),
    "Taxi": ("Taxi-v4", {}),
    "Taxi-Rainy": ("Taxi-v4", {"is_rainy": True}),
}


def gymnasium_tables(env_id: str, kwargs: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Gymnasium's ``P`` as dense tables. Gymnasium lists one tuple per move, so two moves into one
    cell (a FrozenLake side move and the intended one against a wall) are two tuples; their
    probabilities are added here from 0.0 in the list's order, as bbrl's core adds its entries."""
    base = gym.make(env_id, **kwargs).unwrapped
    n, k = base.observation_space.n, base.action_space.n
    P, R, T = np.zeros((n, k, n)), np.zeros((n, k, n)), np.zeros((n, k, n), dtype=bool)
    for s in range(n):
        for a in range(k):
            for prob, y, reward, terminated in base.P[s][a]:
                P[s, a, y] += prob
                R[s, a, y] = reward
                T[s, a, y] = terminated
    return P, R, T, np.asarray(base.initial_state_distrib)


@pytest.mark.parametrize("name", sorted(GYMNASIUM))
def test_toy_text_tables_equal_gymnasiums(name: str) -> None:
    skip_unless_same_arithmetic(name)
    env = envs.make(name)
    P, R, T, start = gymnasium_tables(*GYMNASIUM[name])
    terminal = env.terminal_states
    live = ~terminal
    # Rows of live states equal Gymnasium's bit for bit (probabilities summed over shared next states).
    np.testing.assert_array_equal(env.transitions[live], P[live])
    np.testing.assert_array_equal(env.rewards[live] * (P[live] > 0), R[live] * (P[live] > 0))
    # A transition from a state an episode can reach terminates exactly when it enters a terminal state.
    reach = (start > 0) & live
    while (grown := reach | ((P[reach].sum(axis=1) > 0).any(axis=0) & live)).tolist() != reach.tolist():
        reach = grown
    for s in np.flatnonzero(reach):
        for a in range(env.n_actions):
            ys = np.flatnonzero(P[s, a] > 0)
            assert T[s, a, ys].tolist() == terminal[ys].tolist(), (s, a)
    # Terminal rows are absorbing with reward 0 in bbrl; the start law is Gymnasium's.
    for s in np.flatnonzero(terminal):
        assert np.all(env.transitions[s, :, s] == 1.0) and not env.rewards[s].any()
    np.testing.assert_array_equal(env.start_law, start)


def test_toy_text_literals() -> None:
    """The numbers that matter, kept as literals (what Gymnasium 1.2.1 and later build)."""
    lake = envs.make("FrozenLake-4x4")
    assert np.flatnonzero(lake.terminal_states).tolist() == [5, 7, 11, 12, 15]
    # Right from 14: down is blocked (stays), right enters the goal, up reaches 10. The side moves
    # are Gymnasium's (1 - 1/3) / 2, one ulp above 1/3; into a corner, side plus intended move.
    slip, success = 0.33333333333333337, 0.3333333333333333
    assert lake.transitions[14, 2].tolist() == [0] * 10 + [slip, 0, 0, 0, slip, success]
    assert lake.transitions[0, 0, [0, 4]].tolist() == [0.6666666666666667, slip]
    assert lake.rewards[14, 2, 15] == 1.0 and lake.time_limit == 100
    big = envs.make("FrozenLake-8x8")
    assert np.flatnonzero(big.terminal_states).tolist() == [19, 29, 35, 41, 42, 46, 49, 52, 54, 59, 63]
    cliff = envs.make("CliffWalking")
    assert cliff.transitions[36, 1, 36] == 1.0 and cliff.rewards[36, 1, 36] == -100.0
    # Reward bounds count moves from live states only (a terminal state's absorbing 0 is never earned).
    assert (cliff.reward_bounds, lake.reward_bounds, envs.make("Taxi").reward_bounds) == (
        (-100.0, -1.0),
        (0.0, 1.0),
        (-10.0, 20.0),
    )
    assert np.flatnonzero(cliff.terminal_states).tolist() == [47]
    taxi = envs.make("Taxi")
    assert (taxi.n_states, taxi.n_actions, int((taxi.start_law > 0).sum())) == (500, 6, 300)
    # Delivered: the taxi and the passenger at the destination, R, G, Y or B.
    assert np.flatnonzero(taxi.terminal_states).tolist() == [0, 85, 410, 475]
    # Dropping the passenger at B (landmark 3) from the taxi at (4, 3): +20 and the episode ends.
    s = ((4 * 5 + 3) * 5 + 4) * 4 + 3
    y = ((4 * 5 + 3) * 5 + 3) * 4 + 3
    assert taxi.transitions[s, 5, y] == 1.0 and taxi.rewards[s, 5, y] == 20.0 and taxi.terminal_states[y]
    rainy = envs.make("Taxi-Rainy")
    assert sorted(rainy.transitions[s - 3, 0][rainy.transitions[s - 3, 0] > 0].tolist()) == pytest.approx([1.0])


@pytest.mark.parametrize(
    ("name", "optimum"), [("FrozenLake-4x4", 0.744190), ("FrozenLake-8x8", 0.913220), ("CliffWalking", -13.0)]
)
def test_toy_text_optimal_values(name: str, optimum: float) -> None:
    env = envs.make(name)
    start = int(np.flatnonzero(env.start_law)[0])
    assert episodic_optimum(env)[start] == pytest.approx(optimum, abs=5e-7)


def test_taxi_optimal_value_from_the_start_law() -> None:
    env = envs.make("Taxi")
    assert env.start_law @ episodic_optimum(env) == pytest.approx(7.93, abs=5e-3)


def test_fickle_taxi_keeps_the_whim_in_the_state() -> None:
    env = envs.make("Taxi-Fickle")
    plain = envs.make("Taxi")
    P, P_plain = env.transitions, plain.transitions
    assert env.n_states == 1000
    np.testing.assert_allclose(env.start_law[:500], 0.7 * plain.start_law, rtol=1e-15)
    np.testing.assert_allclose(env.start_law[500:], 0.3 * plain.start_law, rtol=1e-15)
    # Not fickle (the first 500 states): Taxi itself.
    np.testing.assert_array_equal(P[:500, :, :500], P_plain)
    # A fickle passenger (states 500 to 999) turns plain exactly when the taxi changes cell with them
    # aboard, and then has one of the three other destinations, 1/3 each.
    for s in range(500, 1000, 3):
        row, col, passenger, destination = np.unravel_index(s - 500, (5, 5, 5, 4))
        if passenger == destination:
            continue
        for a in range(6):
            to_plain = P[s, a, :500]
            moved = {np.unravel_index(y, (5, 5, 5, 4))[:2] for y in np.flatnonzero(P_plain[s - 500, a])}
            whim = passenger == 4 and any(cell != (row, col) for cell in moved)
            assert (to_plain.sum() > 0) == whim, (s, a)
            for y in np.flatnonzero(to_plain):
                assert np.unravel_index(y, (5, 5, 5, 4))[3] != destination


@pytest.mark.parametrize("name", ["FrozenLake-4x4", "FrozenLake-8x8-NotSlippery", "CliffWalking", "Taxi"])
def test_from_gymnasium_imports_what_bbrl_builds(name: str) -> None:
    skip_unless_same_arithmetic(name)
    env_id, kwargs = GYMNASIUM[name]
    imported = envs.from_gymnasium(gym.make(env_id, **kwargs), checks=200)
    ours = envs.make(name)
    np.testing.assert_array_equal(imported.terminal_states, ours.terminal_states)
    np.testing.assert_array_equal(imported.transitions, ours.transitions)
    live = ~ours.terminal_states
    mask = ours.transitions[live] > 0
    np.testing.assert_array_equal(imported.rewards[live] * mask, ours.rewards[live] * mask)
    assert imported.time_limit == ours.time_limit or (name == "CliffWalking" and imported.time_limit is None)


def test_from_gymnasium_refuses_the_fickle_passenger() -> None:
    with pytest.raises(ValueError, match=r"step\(\) from state \d+ under action \d reached state \d+, which P"):
        envs.from_gymnasium(gym.make("Taxi-v4", fickle_passenger=True), checks=200)


def test_from_gymnasium_refuses_two_rewards_for_one_next_state() -> None:
    with pytest.raises(ValueError, match="one reward per"):
        envs.from_gymnasium(gym.make("CliffWalking-v1", is_slippery=True), checks=1)
    with pytest.raises(ValueError, match="exposes no transition tables"):
        envs.from_gymnasium(gym.make("CartPole-v1"))


# -- Environments as distributions ---------------------------------------------------------------


def test_an_environment_as_a_distribution_draws_different_mdps() -> None:
    env = envs.make("DeepSea", size=5)
    fdm = envs.distribution_of(env, concentration=10.0, spread=0.1)
    P, _ = env.continuing_tables()
    theta = fdm.theta
    mean = theta / theta.sum(axis=2, keepdims=True)
    # The mean keeps 0.9 of each row and spreads 0.1 over the state's one-step neighbours.
    neighbours = (P > 0).any(axis=1)
    expected = 0.9 * P + 0.1 * (neighbours / neighbours.sum(axis=1, keepdims=True))[:, None, :]
    np.testing.assert_allclose(mean, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(theta.sum(axis=2), 10.0, rtol=1e-12)
    # Deterministic rows, yet two draws differ.
    a, b = fdm.sample(seed=1), fdm.sample(seed=2)
    assert not np.array_equal(a, b)
    assert fdm.initial_state == 0 and np.all(fdm.uniform().theta == 1.0)
    # Every (s, a) pays on average what the environment pays.
    r_env = np.einsum("say,say->sa", env.transitions, env.rewards)
    np.testing.assert_allclose(np.einsum("say,say->sa", a, fdm.rewards), r_env, atol=1e-12)
    with pytest.raises(ValueError, match="spread"):
        envs.distribution_of(env, spread=0.0)


class FirstStates(agents.Agent):
    """Records the state of each trajectory's first decision (in this process: threads=1)."""

    learns_offline = False
    seen: ClassVar[list[int]] = []

    def start_task(self) -> None:
        self.first = True

    def act(self, state: int, rng: np.random.Generator) -> int:
        if self.first:
            FirstStates.seen.append(state)
            self.first = False
        return 0


def test_a_start_law_that_is_neither_one_state_nor_uniform_is_the_distributions() -> None:
    taxi = envs.make("Taxi")
    fdm = envs.distribution_of(taxi)
    assert fdm.initial_state is None and fdm.start_law is not None
    np.testing.assert_array_equal(fdm.start_law, taxi.start_law)
    # It survives the uniform prior, the file, a pickle (worker processes) and a drawn MDP.
    np.testing.assert_array_equal(fdm.uniform().start_law, taxi.start_law)
    assert distributions.from_document(fdm.to_document(), "doc") == fdm
    assert pickle.loads(pickle.dumps(fdm)) == fdm
    np.testing.assert_array_equal(envs.from_distribution(fdm, seed=0).start_law, taxi.start_law)
    other = distributions.FDM(fdm.theta, fdm.rewards, None, "x")
    assert other != fdm and other.start_law is None
    # One start state and a uniform start keep their old form (and draws).
    assert envs.distribution_of(envs.make("FrozenLake-4x4")).start_law is None


def test_mdps_drawn_from_a_distribution_with_a_start_law_start_from_it() -> None:
    # Three states; the law never starts in state 2 and starts in state 1 four times as often as in 0.
    theta = np.ones((3, 1, 3))
    law = np.array([0.2, 0.8, 0.0])
    fdm = distributions.FDM(theta, np.zeros((3, 1, 3)), None, "law", start_law=law)
    FirstStates.seen = []
    n = 2000
    bbrl.Experiment(fdm, n_mdps=n, horizon=1, seed=5).run(FirstStates(), threads=1)
    counts = np.bincount(FirstStates.seen, minlength=3)
    assert counts.sum() == n and counts[2] == 0
    assert abs(counts[1] - 0.8 * n) < 5 * np.sqrt(n * 0.8 * 0.2), counts
    # The episodic protocol's episodes too.
    starts = EpisodicExperiment(fdm, episodes=500, n_runs=2, horizon=3, seed=1).starts.ravel()
    assert not np.any(starts == 2) and abs(np.mean(starts == 1) - 0.8) < 5 * np.sqrt(0.16 / starts.size)


def test_a_bad_start_law_is_refused_by_name() -> None:
    theta, rewards = np.ones((2, 1, 2)), np.zeros((2, 1, 2))
    with pytest.raises(ValueError, match="no initial state"):
        distributions.FDM(theta, rewards, 0, "x", start_law=[0.5, 0.5])
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        distributions.FDM(theta, rewards, None, "x", start_law=[1.0])
    with pytest.raises(ValueError, match="sums to"):
        distributions.FDM(theta, rewards, None, "x", start_law=[0.5, 0.6])
    with pytest.raises(ValueError, match="not a probability"):
        distributions.FDM(theta, rewards, None, "x", start_law=[1.5, -0.5])


# -- Bad input ------------------------------------------------------------------------------------

P2 = np.array([[[0.5, 0.5]], [[0.0, 1.0]]])


@pytest.mark.parametrize(
    ("factory", "match"),
    [
        (lambda: envs.make("DeepSea", size=1), "environment 'DeepSea': option 'size' must be >= 2, got 1"),
        (lambda: envs.make("DeepSea", size=10, mapping_seed=2**32), "mapping_seed must be between 0 and 2\\*\\*32 - 1"),
        (lambda: envs.make("Chain", size=3), "environment 'Chain' has no option 'size'"),
        (
            lambda: envs.make("StochasticChain", size=1),
            "environment 'StochasticChain': option 'size' must be >= 2, got 1",
        ),
        (lambda: envs.make("DeepSea", size=-1), "size must be an int >= 0"),
        (lambda: envs.deep_sea_mapping(20_000, 0), "at most 10000"),
        (
            lambda: envs.FiniteEnv(P2, np.ones_like(P2), [1, 0], 0.9, terminal=[False, True]),
            "stay in itself with reward 0",
        ),
        (lambda: envs.FiniteEnv(P2, np.zeros_like(P2), [0, 1], 0.9, terminal=[False, True]), "start probability"),
        (
            lambda: envs.FiniteEnv(P2, np.zeros_like(P2), [1, 0], 0.9, terminal=[True]),
            r"terminal must have shape \(2,\)",
        ),
        (lambda: envs.FiniteEnv(P2, np.zeros_like(P2), [1, 0], 0.9, reward_noise=[[-1.0], [0.0]]), "finite and >= 0"),
        (
            lambda: envs.FiniteEnv(P2, np.zeros_like(P2), [1, 0], 0.9, reward_noise=[1.0, 0.0]),
            r"reward_noise must have shape",
        ),
        (lambda: envs.from_gymnasium(object()), "exposes no transition tables"),
    ],
)
def test_bad_input_is_named(factory, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=match):
        factory()


def test_a_terminal_state_ends_the_episode() -> None:
    env = envs.FiniteEnv(P2, np.zeros_like(P2), [1, 0], 1.0, time_limit=50, terminal=[False, True])
    env.reset(seed=0)
    flags = []
    while not flags or not flags[-1]:
        s2, _, terminal, _ = env.step(0)
        flags.append(terminal)
        assert terminal == (s2 == 1)
    # The continuing form resets instead: state 0 goes back to 0 with the terminal mass.
    P, _ = env.continuing_tables()
    assert P[0, 0].tolist() == [1.0, 0.0]
