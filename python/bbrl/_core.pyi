"""Type stubs of the native module (the Rust core). Use the public modules instead."""

from typing import Any, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "PURPOSES",
    "Agent",
    "AgentError",
    "Distribution",
    "EpisodicExperiment",
    "Experiment",
    "FiniteEnv",
    "FixedPolicy",
    "Progress",
    "ReplayDataset",
    "Snapshot",
    "SparseFeatures",
    "Stepper",
    "ValueErrorEnv",
    "__version__",
    "agent_kinds",
    "binomial_survival",
    "bootstrap_replicates",
    "certify_array",
    "check_agent",
    "confidence_intervals",
    "deep_sea_mapping",
    "ebgstop_array",
    "ebgstop_iterator",
    "environments",
    "evaluate_policy",
    "first_draw",
    "formula_eval",
    "formula_parse",
    "formula_set",
    "host",
    "make_env",
    "memory_limit",
    "name_key",
    "problem_distribution",
    "problem_names",
    "problems",
    "q_iteration",
    "replay_collect",
    "replay_evaluate",
    "replay_online",
    "reward_buffer_entries",
    "run_python_agent",
    "sample_dirichlet",
    "sample_transitions",
    "shipped_formula_set",
    "uniform_prior",
    "value_error_accuracies",
    "value_error_elementwise",
    "value_error_guaranteed_error",
    "value_error_learning_curve",
    "value_error_mean",
    "value_error_references",
    "value_error_rollout_length",
    "value_error_sample_returns",
    "value_error_sample_size",
    "value_error_state_values",
    "value_error_uniform_states",
    "value_iteration",
    "work_units",
]

__version__: str
PURPOSES: dict[str, int]

class AgentError(RuntimeError): ...

@final
class Distribution:
    def __new__(
        cls,
        theta: npt.NDArray[np.float64],
        rewards: npt.NDArray[np.float64],
        initial_state: int,
        start_law: npt.NDArray[np.float64] | None = None,
    ) -> Distribution: ...
    def sample_transitions(self, seed: int) -> npt.NDArray[np.float64]: ...
    def sample_test_mdp(self, seed: int, index: int) -> npt.NDArray[np.float64]: ...

@final
class Agent:
    def __new__(cls, kind: str, params: dict[str, Any]) -> Agent: ...
    @property
    def name(self) -> str: ...
    @property
    def is_oracle(self) -> bool: ...
    def learn_offline(
        self, prior: Distribution, gamma: float, horizon: int, seed: int
    ) -> tuple[float, float, list[int]]: ...
    @property
    def details(self) -> dict[str, str]: ...
    def saved_text(self) -> str | None: ...
    @staticmethod
    def load(text: str, n_states: int, n_actions: int, gamma: float, horizon: int) -> Agent: ...

@final
class Snapshot: ...

@final
class Stepper:
    @staticmethod
    def builtin(agent: Agent, seed: int, index: int = 0) -> Stepper: ...
    @staticmethod
    def python(
        agent: Any,
        name: str,
        n_states: int,
        n_actions: int,
        gamma: float,
        horizon: int,
        seed: int,
        index: int = 0,
    ) -> Stepper: ...
    @property
    def name(self) -> str: ...
    @property
    def n_states(self) -> int: ...
    @property
    def n_actions(self) -> int: ...
    @property
    def gamma(self) -> float: ...
    @property
    def horizon(self) -> int: ...
    def start_task(self) -> None: ...
    def start_episode(self, state: int) -> None: ...
    def act(self, state: int) -> int: ...
    def observe(self, state: int, action: int, reward: float, next_state: int) -> None: ...
    def action_probabilities(self, state: int) -> npt.NDArray[np.float64]: ...
    def snapshot(self) -> Snapshot: ...
    def restore(self, snapshot: Snapshot) -> None: ...
    def fork(self, seed: int, index: int = 0) -> Stepper: ...

@final
class FiniteEnv:
    def __new__(
        cls,
        name: str,
        transitions: npt.NDArray[np.float64],
        rewards: npt.NDArray[np.float64],
        start: npt.NDArray[np.float64],
        discount: float,
        time_limit: int | None = None,
        terminal: npt.NDArray[np.bool_] | None = None,
        reward_noise: npt.NDArray[np.float64] | None = None,
    ) -> FiniteEnv: ...
    @property
    def terminal_states(self) -> npt.NDArray[np.bool_]: ...
    @property
    def reward_noise(self) -> npt.NDArray[np.float64]: ...
    def continuing_tables(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
    def hardness(self) -> dict[str, float]: ...
    @property
    def name(self) -> str: ...
    @property
    def n_states(self) -> int: ...
    @property
    def n_actions(self) -> int: ...
    @property
    def discount(self) -> float: ...
    @property
    def time_limit(self) -> int | None: ...
    @property
    def reward_bounds(self) -> tuple[float, float]: ...
    @property
    def transitions(self) -> npt.NDArray[np.float64]: ...
    @property
    def rewards(self) -> npt.NDArray[np.float64]: ...
    @property
    def start_law(self) -> npt.NDArray[np.float64]: ...
    @property
    def state(self) -> int | None: ...
    def reset(self, seed: int | None = None, index: int = 0) -> int: ...
    def step(self, action: int) -> tuple[int, float, bool, bool]: ...

@final
class Progress:
    def __new__(cls) -> Progress: ...
    def done(self) -> int: ...
    def cancel(self) -> None: ...

@final
class Experiment:
    def __new__(cls, test: Distribution, n_mdps: int, gamma: float, horizon: int, seed: int) -> Experiment: ...
    @property
    def n_mdps(self) -> int: ...
    def transitions(self, index: int) -> npt.NDArray[np.float64]: ...
    def learn_offline(self, agent: Agent, prior: Distribution) -> tuple[float, float, list[int]]: ...
    def run(
        self,
        agent: Agent,
        threads: int | None = None,
        progress: Progress | None = None,
        record_rewards: bool = False,
        start: int = 0,
        stop: int | None = None,
    ) -> tuple[
        npt.NDArray[np.float64],
        npt.NDArray[np.float64],
        npt.NDArray[np.float64],
        npt.NDArray[np.float64] | None,
        npt.NDArray[np.uint64],
    ]:
        """Returns, online wall and CPU seconds per MDP (N,), the (N, T) rewards per step when recorded,
        and the (N, units) work counts (columns in the order of work_units())."""

_EpisodicArrays = tuple[
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.uint64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.uint64],
]

@final
class EpisodicExperiment:
    def __new__(
        cls,
        transitions: npt.NDArray[np.float64],
        rewards: npt.NDArray[np.float64],
        start: npt.NDArray[np.float64],
        terminal: list[bool],
        reward_noise: list[float],
        horizon: int,
        n_runs: int,
        episodes: int,
        gamma: float,
        seed: int,
    ) -> EpisodicExperiment: ...
    @staticmethod
    def drawn(
        test: Distribution, horizon: int, n_runs: int, episodes: int, gamma: float, seed: int
    ) -> EpisodicExperiment: ...
    @property
    def n_runs(self) -> int: ...
    @property
    def episodes(self) -> int: ...
    @property
    def horizon(self) -> int: ...
    @property
    def n_states(self) -> int: ...
    @property
    def n_actions(self) -> int: ...
    def starts(self) -> npt.NDArray[np.uint64]:
        """The start state of every episode, (runs, K)."""
    def episode_optima(self) -> npt.NDArray[np.float64]:
        """V*_0(s_0) of every episode, (runs, K)."""
    def optimal_values(self, run: int) -> npt.NDArray[np.float64]:
        """V*_h(s) of run ``run``'s MDP, (H + 1, S)."""
    def prior_tables(
        self, concentration: float | None = None
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], int]:
        """theta (S, A, S), rewards (S, A, S) and the initial state (-1: uniform) of the prior."""
    def learn_offline(self, agent: Agent, prior: Distribution) -> tuple[float, float, list[int]]: ...
    def run(self, agent: Agent, threads: int | None = None, progress: Progress | None = None) -> _EpisodicArrays:
        """(runs, K) returns, realised regret, expected regret, steps and CPU seconds; per run the
        wall seconds (runs,) and the (runs, units) work counts."""
    def run_python(self, agent: Any, name: str, runs: list[int] | None = None) -> _EpisodicArrays: ...

def host() -> dict[str, Any]:
    """cpu_model, vector_extensions (list), logical_cores, load_average (1 minute),
    cpu_clock_resolution_seconds and vector_path (scalar, neon, avx2 or avx512)."""

def bootstrap_replicates(
    values: npt.NDArray[np.float64], indices: npt.NDArray[np.uint32]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Each resample's mean and interquartile mean (the mean of the middle half, a quarter trimmed
    at each end): ``indices`` is (resamples, len(values)) of indices into ``values``."""

def confidence_intervals(
    samples: npt.NDArray[np.float64],
    low: float,
    high: float,
    delta: float,
    checkpoints: list[int],
    kind: str = "betting",
    max_bet: float = 0.5,
    tuned_for: int | None = None,
    one_sided: bool = False,
    threads: int | None = None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The confidence sequence kind ("betting" or "asymptotic") of each row of samples (rows, n),
    read after each count of checkpoints: the (rows, checkpoints) lower and upper bounds;
    tuned_for: the sample count the sequence is tuned for (betting: None for the anytime bets;
    asymptotic: required); one_sided: each bound at level 1 - delta on its own (for a caller that
    acts on one bound), instead of both at once."""

def reward_buffer_entries(n_mdps: int, horizon: int) -> int:
    """N x T; raises ValueError (naming the size) when N x T x 8 bytes exceeds 2 GiB."""

def sample_transitions(counts: npt.NDArray[np.float64], seed: int) -> npt.NDArray[np.float64]: ...
def run_python_agent(
    experiment: Experiment, agent: Any, name: str, indices: list[int], record_rewards: bool = False
) -> tuple[
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64] | None,
    npt.NDArray[np.uint64],
]: ...
def work_units() -> list[str]:
    """The names of the core's work units, in the order of the columns of every work array."""

def first_draw(seed: int, purpose: int, index: int) -> int: ...
def sample_dirichlet(alpha: npt.NDArray[np.float64], seed: int) -> npt.NDArray[np.float64]: ...
def q_iteration(
    transitions: npt.NDArray[np.float64],
    rewards: npt.NDArray[np.float64],
    gamma: float,
    max_sweeps: int,
    accuracy: float = ...,
) -> npt.NDArray[np.float64]: ...
def value_iteration(
    transitions: npt.NDArray[np.float64], rewards: npt.NDArray[np.float64], gamma: float, epsilon: float = ...
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]: ...
def evaluate_policy(
    transitions: npt.NDArray[np.float64],
    rewards: npt.NDArray[np.float64],
    policy: npt.NDArray[np.float64],
    gamma: float,
    horizon: int,
) -> npt.NDArray[np.float64]: ...
def agent_kinds() -> list[dict[str, Any]]:
    """The agent registry: per kind, ``kind``, ``display``, ``params`` (each ``name``, ``type``,
    ``default`` (None when ``required``), ``doc``, ``sizes_memory`` and its typed range: ``range``
    as users read it, ``min``/``max`` (None: unbounded) with ``min_inclusive``/``max_inclusive``,
    ``choices`` (None unless one of listed strings)), ``online_units`` and
    ``offline_units`` (lists of (parameter, exponent)), ``examples`` (each ``doc`` and ``params``
    by the core's names; the first runs in seconds), ``not_in_quick`` (why ``bbrl quick`` leaves
    the kind out, or None) and ``episodic_baseline`` (whether ``bbrl regret-study`` runs it as a
    regret-minimising baseline)."""

def environments() -> list[dict[str, Any]]:
    """The environment registry: per environment, ``name``, ``long_name``, ``summary``,
    ``state_space`` (``"finite"`` or ``"box2"``), ``state_box`` (``(low, high, name)`` per
    coordinate of a continuous state; empty when finite), ``default_policy`` (None, or a dict with
    ``kind`` ``"uniform"`` or ``"energy-pumping"`` and its ``random_share``), ``default_discount``
    and ``options`` (those it takes, each ``name``, ``type``, ``doc``, ``sizes_memory`` and the
    typed range keys of :func:`agent_kinds`' parameters)."""

def name_key(name: str) -> str:
    """The form registered names are compared in: lower case, without ``-`` and ``_``."""

def problem_names() -> list[tuple[str, str, list[str]]]:
    """Per problem, in the order of :func:`problems`: ``(name, source, priors)``, without building
    the environments (what a name lookup needs)."""

def problems() -> list[dict[str, Any]]:
    """The problem registry, distributions first: per problem, ``name``, ``long_name``, ``summary``,
    ``source`` (``"distribution"`` or ``"environment"``), ``priors`` (names), ``n_states`` (None:
    continuous), ``n_actions``, ``reward_range``, ``horizon`` (None: none), ``start`` (a dict with
    ``kind`` ``"state"``, ``"uniform"``, ``"law"`` or ``"simulator"``) and ``discount``."""

def problem_distribution(
    name: str,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], int, str, str]:
    """A distribution problem's test distribution or prior: theta, rewards, initial state (-1:
    random), name, long name."""

def uniform_prior(
    distribution: Distribution, name: str, long_name: str
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], int, str, str]:
    """The uniform prior of ``distribution``, named by the registry's rule."""

def make_env(name: str, options: dict[str, Any] | None = None) -> FiniteEnv | ValueErrorEnv:
    """Environment ``name`` built with ``options`` (option name to value; None: the default), each
    read by its typed spec in the registry entry's ``options``."""

def check_agent(kind: str, params: dict[str, Any], n_states: int, n_actions: int, gamma: float, horizon: int) -> str:
    """The validate-only path: builds agent ``kind`` from ``params`` and checks the memory its
    parameters size for a prior of ``n_states`` x ``n_actions``, ``gamma`` and ``horizon`` (steps)
    against :func:`memory_limit`, allocating none of it; returns the agent's name. ValueError when
    a parameter is invalid or sizes more memory than the limit (naming it, the size and the limit)."""

def memory_limit() -> int:
    """The memory rule's limit, in bytes: half the machine's physical memory, or
    ``BBRL_MEMORY_LIMIT`` (bytes, or a number with a unit such as ``8GiB``) when set."""

def deep_sea_mapping(size: int, mapping_seed: int) -> npt.NDArray[np.uint8]: ...
def formula_parse(text: str, paper_names: bool = False) -> tuple[str, str, str, int]: ...
def formula_eval(text: str, x0: float, x1: float, x2: float) -> float: ...
def formula_set(n: int, seed: int, n_points: int) -> list[str]: ...
def shipped_formula_set(name: str) -> list[str]: ...

# Value-error estimates (bbrl.value_error).
def value_error_elementwise(
    kind: str, v_hat: npt.NDArray[np.float64], v: npt.NDArray[np.float64], tau: float, c: float
) -> npt.NDArray[np.float64]: ...
def value_error_mean(
    kind: str, v_hat: npt.NDArray[np.float64], v: npt.NDArray[np.float64], tau: float, c: float
) -> float: ...
def value_error_sample_size(epsilon: float, delta: float, c: float, k: int) -> int: ...
def value_error_rollout_length(epsilon: float, tau: float, r_max: float, gamma: float) -> int: ...
def value_error_accuracies(epsilon: float, c: float, split: str) -> tuple[float, float, float]: ...
def value_error_guaranteed_error(m: int, delta: float, c: float, k: int, eps_bar: float) -> float: ...

# Options dicts: the keys of the core's typed options (a None value keeps the default); an unknown
# key, a missing required one or a bad value raises ValueError naming it.
# EBGStop: epsilon, delta, tau, value_range (required), variant, beta, p, max_samples.
def ebgstop_array(samples: npt.NDArray[np.float64], options: dict[str, Any]) -> dict[str, Any]: ...
def ebgstop_iterator(samples: Any, options: dict[str, Any]) -> dict[str, Any]: ...

# Either stopping rule: epsilon, delta, tau, value_low, value_range (required), rule, variant,
# beta, p, max_bet, max_samples.
def certify_array(samples: npt.NDArray[np.float64], options: dict[str, Any]) -> dict[str, Any]: ...

# epsilon, delta, tau, c (required), k, split, rule, variant, beta, p, max_samples, value_range,
# max_rollout_steps, accept_truncated, seed, threads.
def value_error_references(
    env: ValueErrorEnv, policy: FixedPolicy, states: npt.NDArray[Any], options: dict[str, Any]
) -> dict[str, Any]: ...

# The keys of certify_array, rollout_length (required), seed and threads.
def value_error_state_values(
    env: ValueErrorEnv, policy: FixedPolicy, states: npt.NDArray[Any], options: dict[str, Any]
) -> dict[str, Any]: ...
def value_error_sample_returns(
    env: ValueErrorEnv, policy: FixedPolicy, state: npt.NDArray[Any], n: int, length: int, seed: int
) -> tuple[npt.NDArray[np.float64], int]: ...

# alpha, lambda, n_steps, eval_every (required), seed, run.
def value_error_learning_curve(
    env: ValueErrorEnv, policy: FixedPolicy, features: SparseFeatures, states: npt.NDArray[Any], options: dict[str, Any]
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.float64]]: ...
def value_error_uniform_states(env: ValueErrorEnv, m: int, seed: int) -> npt.NDArray[Any]: ...

@final
class ValueErrorEnv:
    @staticmethod
    def from_finite(env: FiniteEnv) -> ValueErrorEnv: ...
    @property
    def name(self) -> str: ...
    @property
    def spec(self) -> tuple[int, int | None, float, tuple[float, float], int | None]: ...

@final
class FixedPolicy:
    @staticmethod
    def uniform(n_actions: int) -> FixedPolicy: ...
    @staticmethod
    def constant(action: int, n_actions: int) -> FixedPolicy: ...
    @staticmethod
    def energy_pumping(random_share: float) -> FixedPolicy: ...
    @staticmethod
    def tabular(probabilities: npt.NDArray[np.float64]) -> FixedPolicy: ...
    @property
    def description(self) -> str: ...

@final
class SparseFeatures:
    @staticmethod
    def tiles(lo: tuple[float, float], hi: tuple[float, float], tiles: int, tilings: int) -> SparseFeatures: ...
    @staticmethod
    def one_hot(n_states: int) -> SparseFeatures: ...

@final
class ReplayDataset:
    # log: a dict with the int64 columns episode, t, state, action, next_state, the float64 column
    # reward, terminal (bool array or None), logging_table (S, A) or None, logging_rows (N, A) or
    # None, and stationary (bool); every key is required.
    def __new__(cls, n_states: int, n_actions: int, start_state: int | None, log: dict[str, Any]) -> ReplayDataset: ...
    @property
    def n_states(self) -> int: ...
    @property
    def n_actions(self) -> int: ...
    @property
    def start_state(self) -> int | None: ...
    def logged_starts(self) -> npt.NDArray[np.int64]: ...
    # transitions and rewards (S, A, S), start (S,), unvisited (the rule for untried pairs, in words).
    def mle_model(self) -> dict[str, Any]: ...
    @property
    def n_rows(self) -> int: ...
    @property
    def n_episodes(self) -> int: ...
    @property
    def logging_kind(self) -> str: ...
    def logging_table(self) -> npt.NDArray[np.float64] | None: ...
    def columns(self) -> dict[str, npt.NDArray[Any]]: ...
    def complete_episodes(self, end_kind: str, horizon: int) -> tuple[int, int, int | None]: ...

# Options: method ("queue", "psrs", "pers", "model"), episode_end ("start", "terminal" or an int
# horizon), gamma, seed, runs, first_run, threads, psrs_order, max_steps, m_rule, m_value,
# max_length, weighted, max_episodes, trace.
def replay_evaluate(
    stepper: Stepper, python_agent: bool, data: ReplayDataset, options: dict[str, Any]
) -> list[dict[str, Any]]: ...
def replay_collect(
    env: FiniteEnv,
    policy: npt.NDArray[np.float64],
    n_episodes: int,
    end_kind: str,
    horizon: int,
    max_steps: int,
    seed: int,
) -> ReplayDataset: ...

# Options: n_episodes (required), episode_end, gamma, max_steps, seed, runs, first_run, threads.
def replay_online(
    stepper: Stepper, python_agent: bool, env: FiniteEnv, options: dict[str, Any]
) -> npt.NDArray[np.float64]: ...
def binomial_survival(n: int, p: float, t: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]: ...
