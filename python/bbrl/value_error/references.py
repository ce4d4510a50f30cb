"""Algorithm 1's stored references and CMAPVE against them, with the guaranteed error."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from .. import _core
from ..checks import count
from ..envs import FiniteEnv
from ..fileio import check_suffix, read_table, table_problem, write_atomic
from ..threads import worker_threads
from .budget import Split, sample_size
from .budget import rollout_length as rollout_length_of
from .ebgstop import Variant
from .envs import Environment, Policy, as_environment
from .losses import cmapve_estimate
from .stopping import DEFAULT_BETS, DEFAULT_MAX_BET, DEFAULT_RULE, Bets, Rule, check_bets, check_rule

DEFAULT_MAX_SAMPLES = 100_000_000
#: The cap on a rollout that runs to termination (an undiscounted environment without a time
#: limit): far above the episodes of Mountain Car under energy pumping (about a thousand steps at
#: most) and of Puddle World under the uniform policy (2757 on average from the far corner, 95th
#: percentile 7694, a tail falling by e about every 2500 steps).
DEFAULT_MAX_ROLLOUT_STEPS = 100_000
FORMAT = "bbrl.value_error.references/1"


@dataclass(frozen=True)
class References:
    """Reference values at m states, how each was obtained, and every parameter of the design."""

    states: npt.NDArray[Any]
    """(m, 2) float coordinates or (m,) int indices."""
    values: npt.NDArray[np.float64]
    n_samples: npt.NDArray[np.uint64]
    """Truncated returns sampled per state."""
    n_steps: npt.NDArray[np.uint64]
    """Environment steps simulated per state."""
    reasons: tuple[str, ...]
    """How EBGStop stopped: ``relative``/``absolute`` (certified) or ``cap``."""
    params: dict[str, Any] = field(repr=False)
    """The settings (epsilon, delta, tau, c, k, split, rule, variant, beta, p, max_samples,
    max_rollout_steps, accept_truncated, seed), the environment and policy, and the derived design
    (m, eps_m, eps_bar, state_delta, rollout_length, to_termination, value_low, value_range,
    guaranteed_error)."""
    n_cut: npt.NDArray[np.uint64] | None = None
    """Rollouts per state that reached the rollout length before the episode ended (None in
    files written before it was recorded). For an undiscounted environment without a time limit
    (``params["to_termination"]``) these rollouts reached ``max_rollout_steps``; they are only
    there when ``accept_truncated`` was given, and the values are then of returns truncated there."""

    @property
    def m(self) -> int:
        return len(self.values)

    @property
    def certified(self) -> bool:
        """Whether every reference was certified (no state hit ``max_samples``)."""
        return all(r in ("relative", "absolute") for r in self.reasons)

    @property
    def guaranteed_error(self) -> float:
        """The bound on ``|CMAPVE - estimate|`` for any of the k queries (inf if not certified)."""
        return float(self.params["guaranteed_error"]) if self.certified else float("inf")

    @property
    def truncated_rollouts(self) -> int:
        """Rollouts, over every state, that reached the rollout length before their episode ended."""
        return 0 if self.n_cut is None else int(self.n_cut.sum())

    def to_polars(self) -> pl.DataFrame:
        """One row per state: coordinates, value, counts, reason, and one ``param.*`` column per
        parameter (constant; Parquet stores each once)."""
        columns: dict[str, Any] = {}
        if self.states.ndim == 2:
            columns["state_0"], columns["state_1"] = self.states[:, 0], self.states[:, 1]
        else:
            columns["state"] = self.states
        columns |= {"value": self.values, "n_samples": self.n_samples, "n_steps": self.n_steps}
        if self.n_cut is not None:
            columns["n_cut"] = self.n_cut
        columns["reason"] = list(self.reasons)
        frame = pl.DataFrame(columns)
        params = {f"param.{k}": _scalar(v) for k, v in self.params.items()}
        return frame.with_columns([pl.lit(v).alias(k) for k, v in params.items()])

    def save(self, path: str | Path) -> Path:
        """Write Parquet atomically (temporary file, then rename); a suffix other than ``.parquet`` is refused."""
        path = check_suffix(path, ".parquet", "a references file")
        buffer = io.BytesIO()
        self.to_polars().write_parquet(buffer)
        return write_atomic(path, buffer.getvalue())

    @classmethod
    def load(cls, path: str | Path) -> References:
        """Reads a file written by :meth:`save`.

        Raises:
            FileNotFoundError: no such file.
            ValueError: naming the file, and the column or row, for a file that is not one.
        """
        what = "value-error references file"
        frame = read_table(check_suffix(path, ".parquet", "a references file"), what)
        where = f"{what} {str(path)!r}"
        if frame.height == 0 or "param.format" not in frame.columns:
            raise ValueError(f"{where}: not a bbrl value-error references file (no rows, or no param.format)")
        if frame["param.format"][0] != FORMAT:
            raise ValueError(f"{where}: format {frame['param.format'][0]!r}, expected {FORMAT!r}")
        planar = "state" not in frame.columns
        needed = ["state_0", "state_1"] if planar else ["state"]
        missing = [c for c in (*needed, "value", "n_samples", "n_steps", "reason") if c not in frame.columns]
        if missing:
            raise ValueError(f"{where}: missing the columns {missing}")
        kinds = {c: "number" if planar else "integer" for c in needed}
        kinds |= {
            "value": "number",
            "n_samples": "integer",
            "n_steps": "integer",
            "n_cut": "integer",
            "reason": "string",
        }
        problem = table_problem(frame, kinds)
        if problem:
            raise ValueError(f"{where}: {problem}")
        params = {c.removeprefix("param."): frame[c][0] for c in frame.columns if c.startswith("param.")}
        if planar:
            states = np.column_stack([frame["state_0"].to_numpy(), frame["state_1"].to_numpy()])
        else:
            states = frame["state"].to_numpy().astype(np.int64)
        return cls(
            states=states,
            values=frame["value"].to_numpy().astype(np.float64),
            n_samples=frame["n_samples"].to_numpy().astype(np.uint64),
            n_steps=frame["n_steps"].to_numpy().astype(np.uint64),
            reasons=tuple(frame["reason"].to_list()),
            params=params,
            n_cut=frame["n_cut"].to_numpy().astype(np.uint64) if "n_cut" in frame.columns else None,
        )


def _scalar(value: Any) -> Any:
    return "" if value is None else (str(value) if isinstance(value, (list, tuple)) else value)


def reference_values(
    env: Environment | FiniteEnv,
    policy: Policy,
    states: npt.ArrayLike | int | None = None,
    *,
    epsilon: float = 0.1,
    delta: float = 0.1,
    tau: float = 1.0,
    c: float = 1.0,
    k: int = 1,
    split: Split = "corrected",
    rule: Rule = DEFAULT_RULE,
    bets: Bets = DEFAULT_BETS,
    variant: Variant = "checkpoints",
    beta: float = 1.1,
    p: float = 1.1,
    max_samples: int = DEFAULT_MAX_SAMPLES,
    value_range: float | None = None,
    max_rollout_steps: int | None = None,
    accept_truncated: bool = False,
    seed: int = 0,
    threads: int | None = None,
) -> References:
    """Algorithm 1: certified reference values of ``policy`` on ``env``.

    ``env``: an :class:`Environment` or a :class:`bbrl.envs.FiniteEnv`.
    ``states``: ``None`` draws Algorithm 1's m = ``sample_size(epsilon, delta, c, k)`` states
    uniformly; an int draws that many; an array gives them ((m, 2) coordinates or (m,) indices).
    ``epsilon`` is the target accuracy of CMAPVE (clip level ``c``, floor ``tau`` in value units)
    for ``k`` queries, all holding with probability ``1 - delta``; ``split`` chooses how epsilon is
    divided (see :func:`accuracies`). Each state runs the stopping ``rule`` (``"betting"``, the
    default, with ``bets`` (see :func:`bbrl.value_error.certify_mean`), or the paper's
    ``"ebgstop"`` with ``variant``, ``beta``, ``p``) with
    (eps_bar, delta/(2m), tau) on returns truncated by Lemma 5, in parallel over states on
    ``threads`` threads (None: every core; never more than the states, and more than the cores
    warns: :mod:`bbrl.threads`; the values do not depend on it); ``max_samples`` caps
    the returns per state (a capped state is reported, and voids the guarantee). ``value_range``
    (the paper's V_max, value units) replaces the range the reward bounds give the returns,
    anchored at the highest possible return.

    An undiscounted environment without a time limit (Mountain Car or Puddle World with
    ``discount=1``) is the episodic task: each rollout runs until its episode ends, with at most
    ``max_rollout_steps`` steps (default :data:`DEFAULT_MAX_ROLLOUT_STEPS`), and the range of the
    returns is that of any return up to that many steps (the reward bounds times the cap). If a
    rollout reaches the cap, its state can not be certified to termination: by default that is a
    ``ValueError`` naming the cap and how many states had such a rollout (each state stops at its
    first); ``accept_truncated=True`` certifies the return truncated at the cap instead, and
    ``n_cut`` counts the rollouts it cut. ``max_rollout_steps`` and ``accept_truncated`` are refused
    for any other environment (Lemma 5 or the time limit sets the length there; with a time limit
    the values are over that many steps).
    """
    env = as_environment(env)
    check_rule(rule)
    check_bets(bets)
    count(k, "k", 1)
    count(seed, "seed", 0)
    count(max_samples, "max_samples", 1)
    count(max_rollout_steps, "max_rollout_steps", 1, optional=True)
    if not isinstance(accept_truncated, (bool, np.bool_)):
        raise TypeError(f"accept_truncated must be a bool, got {accept_truncated!r}")
    if states is None:
        states = env.uniform_states(sample_size(epsilon, delta, c, k), seed)
    elif isinstance(states, (int, np.integer)) and not isinstance(states, bool):
        states = env.uniform_states(int(states), seed)
    array = _states_array(env, states)
    threads = worker_threads(threads, len(array))
    out = _core.value_error_references(
        env.core, policy.core, array, dict(epsilon=float(epsilon), delta=float(delta), tau=float(tau), c=float(c),
        k=int(k), split=split, rule=rule, bets=bets, variant=variant, beta=float(beta), p=float(p),
        max_samples=int(max_samples),
        value_range=None if value_range is None else float(value_range), max_rollout_steps=max_rollout_steps,
        accept_truncated=bool(accept_truncated), seed=int(seed), threads=threads),
    )  # fmt: skip
    settings = {
        "format": FORMAT,
        "epsilon": float(epsilon),
        "delta": float(delta),
        "tau": float(tau),
        "c": float(c),
        "k": int(k),
        "split": split,
        "rule": rule,
        "bets": bets,
        "variant": variant,
        "beta": float(beta),
        "p": float(p),
        "max_samples": int(max_samples),
        "max_rollout_steps": max_rollout_steps,
        "accept_truncated": bool(accept_truncated),
        "seed": int(seed),
    }
    keys = ("m", "eps_m", "eps_bar", "state_delta", "rollout_length", "to_termination", "value_low", "value_range")
    design = {key: out[key] for key in keys}
    design |= {"guaranteed_error": out["guaranteed_error"], "env_name": out["env"], "policy_description": out["policy"]}
    env_params = {f"env_{k}": v for k, v in env.params.items()}
    policy_params = {f"policy_{k}": v for k, v in policy.params.items()}
    return References(
        states=array,
        values=out["value"],
        n_samples=out["n_samples"],
        n_steps=out["n_steps"],
        reasons=tuple(out["reason"]),
        params=settings | design | env_params | policy_params,
        n_cut=out["n_cut"],
    )


def _states_array(env: Environment, states: Any) -> npt.NDArray[Any]:
    if env.n_states is None:
        array = np.ascontiguousarray(states, dtype=np.float64)
        if array.ndim != 2 or array.shape[1] != 2 or len(array) == 0:
            raise ValueError(f"states of {env.name} must be a non-empty (m, 2) array, got shape {array.shape}")
        return array
    array = np.asarray(states)
    if array.ndim != 1 or len(array) == 0 or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"states of {env.name} must be a non-empty 1-D integer array, got {array.dtype} {array.shape}")
    return np.ascontiguousarray(array, dtype=np.int64)


@dataclass(frozen=True)
class CmapveResult:
    """CMAPVE of a learned value function against certified references."""

    estimate: float
    """Mean of min(c, |v_hat - v_ref| / (|v_ref| + tau)) over the reference states."""
    bound: float
    """With probability >= 1 - delta (over the references), |CMAPVE - estimate| <= bound for all k
    queries; inf if some reference was not certified."""

    @property
    def interval(self) -> tuple[float, float]:
        """The guaranteed band, clipped to the loss's range [0, c]."""
        return max(0.0, self.estimate - self.bound), self.estimate + self.bound


def cmapve(v_hat: npt.ArrayLike | Callable[[npt.NDArray[Any]], npt.ArrayLike], references: References) -> CmapveResult:
    """CMAPVE of ``v_hat`` against stored references, with the error the references guarantee.

    ``v_hat``: the learned values at ``references.states`` (an array of length m), or a function
    taking the (m, 2) or (m,) states and returning them. Uses the references' tau and c.
    """
    values = v_hat(references.states) if callable(v_hat) else v_hat
    values = np.ascontiguousarray(values, dtype=np.float64).ravel()
    if len(values) != references.m:
        raise ValueError(f"v_hat has {len(values)} values for {references.m} reference states")
    tau, c = float(references.params["tau"]), float(references.params["c"])
    estimate = cmapve_estimate(values, references.values, tau, c)
    return CmapveResult(estimate, references.guaranteed_error)


def sample_returns(
    env: Environment | FiniteEnv, policy: Policy, state: npt.ArrayLike, n: int, length: int, seed: int = 0
) -> tuple[npt.NDArray[np.float64], int]:
    """``n`` discounted returns of at most ``length`` steps from one ``state`` (the rollout sampler
    the references use), and the number of environment steps simulated."""
    env = as_environment(env)
    count(n, "n", 0)
    count(length, "length", 1)
    count(seed, "seed", 0)
    array = _states_array(env, np.asarray(state)[None] if env.n_states is None else np.atleast_1d(state))
    returns, steps = _core.value_error_sample_returns(env.core, policy.core, array, n, length, seed)
    return returns, int(steps)


@dataclass(frozen=True)
class StateValues:
    """Algorithm 2's estimate at each state with explicit per-state parameters."""

    values: npt.NDArray[np.float64]
    n_samples: npt.NDArray[np.uint64]
    n_steps: npt.NDArray[np.uint64]
    reasons: tuple[str, ...]
    n_cut: npt.NDArray[np.uint64]
    """Rollouts per state cut at ``rollout_length`` before the episode ended."""
    rollout_length: int
    value_low: float
    """The lowest return the stopping rule assumed, and the width of the range above it."""
    value_range: float
    rule: str


def state_values(
    env: Environment | FiniteEnv,
    policy: Policy,
    states: npt.ArrayLike,
    *,
    epsilon: float,
    delta: float,
    tau: float = 1.0,
    rollout_length: int | None = None,
    value_range: float | None = None,
    value_low: float | None = None,
    rule: Rule = DEFAULT_RULE,
    variant: Variant = "checkpoints",
    beta: float = 1.1,
    p: float = 1.1,
    max_bet: float = DEFAULT_MAX_BET,
    bets: Bets = DEFAULT_BETS,
    max_samples: int = DEFAULT_MAX_SAMPLES,
    seed: int = 0,
    threads: int | None = None,
) -> StateValues:
    """Algorithm 2 alone at each state: the stopping ``rule`` with (``epsilon``, ``delta``,
    ``tau``) per state, as in the paper's sample-count study (which passes epsilon and delta to
    each state directly).

    ``rollout_length`` defaults to Lemma 5 with ``epsilon``, or the time limit when undiscounted,
    or, undiscounted without a time limit, :data:`DEFAULT_MAX_ROLLOUT_STEPS` as a cap on rollouts
    that run to termination (``n_cut`` says how many rollouts reached the length: here nothing is
    refused, unlike :func:`reference_values`);
    ``value_range`` (the paper's V_max, value units) to the range of a return of that length given
    the reward bounds; ``value_low`` (the lowest return) to the top of that range minus
    ``value_range``. ``max_bet``, ``bets``: the betting rule's truncation and bets (see
    :func:`bbrl.value_error.certify_mean`). ``threads``: worker threads (None: every core; results
    do not depend on it).
    """
    env = as_environment(env)
    check_rule(rule)
    check_bets(bets)
    count(seed, "seed", 0)
    count(max_samples, "max_samples", 1)
    lo, hi = env.reward_bounds
    if rollout_length is None:
        if env.discount < 1.0:
            rollout_length = rollout_length_of(epsilon, tau, max(abs(lo), abs(hi)), env.discount)
            if env.time_limit is not None:
                rollout_length = min(rollout_length, env.time_limit)
        elif env.time_limit is not None:
            rollout_length = env.time_limit
        else:
            rollout_length = DEFAULT_MAX_ROLLOUT_STEPS
    count(rollout_length, "rollout_length", 1)
    low, high = return_bounds(env, rollout_length)
    if value_range is None:
        value_range = max(high - low, np.finfo(float).tiny)
    if value_low is None:
        value_low = high - value_range
    array = _states_array(env, states)
    threads = worker_threads(threads, len(array))
    options = dict(rule=rule, epsilon=float(epsilon), delta=float(delta), tau=float(tau), value_low=float(value_low),
        value_range=float(value_range), variant=variant, beta=float(beta), p=float(p), max_bet=float(max_bet),
        bets=bets, max_samples=int(max_samples), rollout_length=int(rollout_length), seed=int(seed),
        threads=threads)  # fmt: skip
    out = _core.value_error_state_values(env.core, policy.core, array, options)
    return StateValues(
        out["value"],
        out["n_samples"],
        out["n_steps"],
        tuple(out["reason"]),
        out["n_cut"],
        int(rollout_length),
        float(value_low),
        float(value_range),
        rule,
    )


def return_bounds(env: Environment, rollout_length: int) -> tuple[float, float]:
    """The lowest and highest return of 1 to ``rollout_length`` rewards within the reward bounds
    (value units): min(lo, lo S) and max(hi, hi S) with S the discounted sum of ``rollout_length`` ones."""
    lo, hi = env.reward_bounds
    g = env.discount
    weight = (1 - g**rollout_length) / (1 - g) if g < 1 else float(rollout_length)
    return min(lo, lo * weight), max(hi, hi * weight)
