"""Finite environments: :class:`FiniteEnv` (tables stepped by the Rust core, exact values) and the
named ones of the registry (see :mod:`bbrl.envs`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from ..checks import count as check_count
from ..checks import index as check_index
from ..distributions import get
from . import registry
from .gymnasium_import import tables_from_gymnasium

__all__ = [
    "NAMES",
    "FiniteEnv",
    "chain",
    "deep_sea_mapping",
    "from_distribution",
    "from_gymnasium",
    "make",
    "river_swim",
    "six_arms",
]


class FiniteEnv:
    """A finite environment: tables ``P[s, a, s']``, ``R[s, a, s']``, a start law, a discount in
    [0, 1] and an optional time limit in steps (required when the discount is 1).

    Args:
        transitions: ``P``, shape (S, A, S), each ``P[s, a]`` a probability vector.
        rewards: ``R``, shape (S, A, S), the reward of each transition.
        start: the start *law*: a probability vector of shape (S,) from which each episode's first
            state is drawn (not a state: to start in state ``s``, pass ``numpy.eye(S)[s]``).
        discount: in [0, 1].
        time_limit: steps after which an episode is truncated, or None (required with discount 1).
        name: the environment's name.
        terminal: optional flags, shape (S,), of the states whose entry ends an episode: each must
            stay in itself with reward 0 under every action, and the start law must give it no mass.
        reward_noise: optional standard deviations, shape (S, A), of Gaussian noise added to each
            (s, a)'s reward (the tables hold the mean).
    """

    def __init__(
        self,
        transitions: Any,
        rewards: Any,
        start: Any,
        discount: float,
        time_limit: int | None = None,
        name: str = "FiniteEnv",
        terminal: Any = None,
        reward_noise: Any = None,
    ) -> None:
        P = np.ascontiguousarray(transitions, dtype=np.float64)
        R = np.ascontiguousarray(rewards, dtype=np.float64)
        mu = np.ascontiguousarray(start, dtype=np.float64)
        if P.ndim != 3:
            raise ValueError(f"transitions must have shape (S, A, S), got {P.shape}")
        if R.shape != P.shape:
            raise ValueError(f"rewards must have shape (S, A, S) = {P.shape}, as the transitions; got {R.shape}")
        if mu.shape != (P.shape[0],):
            given = f"a single value {start!r}" if np.ndim(start) == 0 else f"shape {mu.shape}"
            raise ValueError(
                f"start is the start law, a probability vector over the {P.shape[0]} states (shape ({P.shape[0]},)), "
                f"got {given}; to start in state s, pass numpy.eye({P.shape[0]})[s]"
            )
        if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, int)):
            raise TypeError(f"time_limit must be an int or None, got {time_limit!r}")
        flags = None if terminal is None else np.ascontiguousarray(terminal, dtype=bool)
        if flags is not None and flags.shape != (P.shape[0],):
            raise ValueError(f"terminal must have shape ({P.shape[0]},), got {flags.shape}")
        noise = None if reward_noise is None else np.ascontiguousarray(reward_noise, dtype=np.float64)
        if noise is not None and noise.shape != P.shape[:2]:
            raise ValueError(f"reward_noise must have shape {P.shape[:2]}, got {noise.shape}")
        self._core = _core.FiniteEnv(str(name), P, R, mu, float(discount), time_limit, flags, noise)

    @classmethod
    def _wrap(cls, core: Any) -> FiniteEnv:
        env = object.__new__(cls)
        env._core = core
        return env

    # -- description ----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return str(self._core.name)

    @property
    def n_states(self) -> int:
        return int(self._core.n_states)

    @property
    def n_actions(self) -> int:
        return int(self._core.n_actions)

    @property
    def discount(self) -> float:
        return float(self._core.discount)

    @property
    def time_limit(self) -> int | None:
        """Steps after which an episode is truncated, or None (continuing)."""
        return self._core.time_limit

    @property
    def reward_bounds(self) -> tuple[float, float]:
        """(min, max) of the reward of a transition that can happen."""
        return tuple(self._core.reward_bounds)  # type: ignore[return-value]

    @property
    def transitions(self) -> np.ndarray:
        """``P[s, a, s']``, shape (S, A, S)."""
        return self._core.transitions

    @property
    def rewards(self) -> np.ndarray:
        """``R[s, a, s']``, shape (S, A, S)."""
        return self._core.rewards

    @property
    def start_law(self) -> np.ndarray:
        """The start law, shape (S,)."""
        return self._core.start_law

    @property
    def terminal_states(self) -> np.ndarray:
        """``terminal[s]``: entering s ends an episode (an absorbing state with reward 0), shape (S,)."""
        return self._core.terminal_states

    @property
    def reward_noise(self) -> np.ndarray:
        """The standard deviation of the Gaussian noise on each (s, a)'s reward, shape (S, A)."""
        return self._core.reward_noise

    def continuing_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """``(P, R)`` of the continuing form: a transition into a terminal state becomes a reset
        to the start law (its reward kept in expectation); the tables themselves when no state is
        terminal."""
        return self._core.continuing_tables()  # type: ignore[no-any-return]

    def hardness(self) -> dict[str, float]:
        """The hardness measures (Conserva & Rauber 2022) of the continuing form restricted to the
        states reachable from the start law, values discounted at 0.99: ``diameter`` (steps; inf
        when some state cannot reach another), ``gap_sum`` (sum of 1/gap over the non-zero gaps),
        ``gap_sum_colosseum`` (sum of 1/(gap + 0.1) over every pair), ``value_norm`` (the largest
        standard deviation of V* at the next state), ``value_norm_colosseum`` (Colosseum's
        column: its formula, and 0 for a deterministic MDP, as Colosseum reports it), ``n_states``
        (the states measured) and ``discount``."""
        return dict(self._core.hardness())

    @property
    def state(self) -> int | None:
        """The current state (None before the first :meth:`reset`)."""
        return self._core.state

    # -- stepping -------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, *, index: int = 0) -> int:
        """Starts an episode in a state drawn from the start law; a ``seed`` restarts the
        environment's stream at ``(seed, environment, index)`` of :mod:`bbrl.seeds` first: the
        stream a :class:`bbrl.Experiment` with that seed steps test MDP ``index`` with."""
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or index < 0:
            raise ValueError(f"index must be a non-negative int, got {index!r}")
        return int(self._core.reset(None if seed is None else int(seed), int(index)))

    def step(self, action: int) -> tuple[int, float, bool, bool]:
        """One step: (next state, reward, terminal, truncated by the time limit)."""
        s2, r, terminal, truncated = self._core.step(check_index(action, "action", self.n_actions))
        return int(s2), float(r), bool(terminal), bool(truncated)

    # -- exact values ---------------------------------------------------------------------------

    def _expected_rewards(self) -> np.ndarray:
        return np.einsum("say,say->sa", self.transitions, self.rewards)

    def policy_values(self, policy: Any) -> np.ndarray:
        """Exact values of a stationary stochastic ``policy`` (S, A): ``inv(I - gamma P_pi) r_pi`` for a
        discount below 1; for a time-limited undiscounted environment, the expected total reward
        over the time limit from each state (backward induction)."""
        pi = np.asarray(policy, dtype=np.float64)
        if pi.shape != (self.n_states, self.n_actions):
            raise ValueError(f"policy must have shape ({self.n_states}, {self.n_actions}), got {pi.shape}")
        P_pi = np.einsum("sa,say->sy", pi, self.transitions)
        r_pi = np.einsum("sa,sa->s", pi, self._expected_rewards())
        if self.discount < 1.0:
            return np.linalg.solve(np.eye(self.n_states) - self.discount * P_pi, r_pi)
        v = np.zeros(self.n_states)
        for _ in range(self.time_limit or 0):
            v = r_pi + P_pi @ v
        return v

    def optimal_values(self, tolerance: float = 1e-10) -> np.ndarray:
        """Optimal values: value iteration to ``tolerance`` (sup norm of a sweep's change, scaled
        by gamma / (1 - gamma)) for a discount below 1, backward induction over the time limit otherwise."""
        r = self._expected_rewards()
        v = np.zeros(self.n_states)
        if self.discount < 1.0:
            g = self.discount
            while True:
                new = (r + g * self.transitions @ v).max(axis=1)
                if np.max(np.abs(new - v)) * g / (1 - g) <= tolerance:
                    return new
                v = new
        for _ in range(self.time_limit or 0):
            v = (r + self.transitions @ v).max(axis=1)
        return v

    def __repr__(self) -> str:
        limit = f", time_limit={self.time_limit}" if self.time_limit else ""
        return (
            f"FiniteEnv({self.name!r}, {self.n_states} states, {self.n_actions} actions, "
            f"discount={self.discount}{limit})"
        )


def make(name: str, discount: float | None = None, **options: Any) -> FiniteEnv:
    """The finite environment ``name`` of the registry (:data:`NAMES`; case, ``-``, ``_`` and
    spaces ignored) with ``discount`` (default: the environment's own, see ``bbrl envs``) and the
    entry's other ``options`` (DeepSea's ``size`` and ``mapping_seed``, StochasticChain's ``size``).

    Raises:
        ValueError: an unknown name, an option the environment does not take, or a continuous
            environment (build those with :mod:`bbrl.value_error`).
    """
    entry = registry.entry(name)
    if entry["state_space"] != "finite":
        raise ValueError(f"{entry['name']} is continuous: build it with bbrl.value_error (finite: {', '.join(NAMES)})")
    for key in ("size", "mapping_seed"):
        if key in options and options[key] is not None:
            options[key] = check_count(options[key], key, minimum=0)
    core = registry.make_core(entry["name"], discount=None if discount is None else float(discount), **options)
    return FiniteEnv._wrap(core)


def deep_sea_mapping(size: int, mapping_seed: int) -> np.ndarray:
    """bsuite's DeepSea action map, ``numpy.random.RandomState(mapping_seed).binomial(1, 0.5,
    (size, size))``, computed by the core bit for bit (MT19937 and NumPy's legacy binomial): action
    ``a`` moves right at ``(row, col)`` iff ``a == mapping[row, col]``."""
    return np.asarray(
        _core.deep_sea_mapping(
            check_count(size, "size", minimum=0), check_count(mapping_seed, "mapping_seed", minimum=0)
        )
    )


def six_arms(discount: float = 0.95) -> FiniteEnv:
    """SixArms (Strehl & Littman): from the hub (state 0, the start), action i reaches arm i + 1
    with probability 1, 0.15, 0.10, 0.05, 0.03, 0.01 (else stays, reward 0); in an arm, the arm's
    action stays with reward 50, 133, 300, 800, 1660 or 6000 (arm 1: every action but 4), and the
    others return to the hub. Continuing."""
    return make("SixArms", discount)


def river_swim(variant: str = "osband", discount: float | None = None) -> FiniteEnv:
    """RiverSwim, 6 states, actions 0 = left (always one state left) and 1 = right (against the
    current).

    Args:
        variant: ``"osband"`` (Osband, Russo & Van Roy 2013, replayed by Mandel et al. 2016):
            start in 0, 20 undiscounted steps, reward 0.005 for left in state 0 and 1 for right in
            state 5; ``"strehl"`` (Strehl & Littman 2008): start in 1 or 2, continuing, reward 5
            for staying in 0 and 10000 for staying in 5.
        discount: defaults to 1 for ``"osband"`` (its 20 steps are undiscounted) and 0.95 for
            ``"strehl"``.
    """
    if variant not in ("osband", "strehl"):
        raise ValueError(f"variant must be 'osband' or 'strehl', got {variant!r}")
    return make(f"RiverSwim-{variant.capitalize()}", discount)


def chain(discount: float = 0.99) -> FiniteEnv:
    """Chain (Strens 2000): states 0..4 in a row; action 0 moves one state forward (reward 0; at
    state 4 it stays, reward 10), action 1 returns to state 0 (reward 2); with probability 0.2
    the other action's outcome happens instead. Starts in state 0; continuing."""
    return make("Chain", discount)


def from_distribution(distribution: Any, seed: int, index: int = 0, discount: float = 0.95) -> FiniteEnv:
    """MDP ``index`` drawn from an FDM distribution (or a name such as ``"GC"``) with the seed rule's
    stream ``(seed, test_mdp, index)``: test MDP ``index`` of a :class:`bbrl.Experiment` with that
    seed. Its start law is the distribution's (its initial state, its start law, or uniform)."""
    fdm = get(distribution) if isinstance(distribution, str) else distribution
    P = fdm._core.sample_test_mdp(int(seed), int(index))
    start = np.full(fdm.n_states, 1.0 / fdm.n_states) if fdm.start_law is None else fdm.start_law.copy()
    if fdm.initial_state is not None:
        start = np.zeros(fdm.n_states)
        start[fdm.initial_state] = 1.0
    return FiniteEnv(P, fdm.rewards, start, discount, name=f"{fdm.name}[{index}]")


def from_gymnasium(env: Any, *, checks: int = 200, seed: int = 0) -> FiniteEnv:
    """A Gymnasium toy-text environment that exposes its tables ``P`` (FrozenLake, CliffWalking,
    Taxi) as an exact :class:`FiniteEnv`, after checking the tables against ``checks`` calls of its
    ``step()`` per (state, action) with its own generator seeded by ``seed``.

    Terminal states are those the tables' terminating entries enter (their rows become absorbing,
    reward 0); the time limit is the environment's ``max_episode_steps`` when it is wrapped in a
    time limit, else none (then the discount is 0.99, else 1).

    Raises:
        ValueError: the environment has no tables, its tables cannot be one table per
            (s, a, s') (two rewards or termination flags for one next state), or its ``step()``
            does what the tables do not say (for example Taxi's fickle passenger, whose new
            destination ``step()`` draws outside ``P``), each naming the state, action and
            difference.
    """
    t = tables_from_gymnasium(env, checks=check_count(checks, "checks", minimum=1), seed=check_count(seed, "seed", 0))
    discount = 1.0 if t.time_limit is not None else 0.99
    return FiniteEnv(t.transitions, t.rewards, t.start, discount, t.time_limit, name=t.name, terminal=t.terminal)


#: The named finite environments of the registry (what replay's ``env=`` and ``bbrl replay --truth`` accept).
NAMES: tuple[str, ...] = registry.names("finite")
