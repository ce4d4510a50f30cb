"""FDM distributions over MDPs: the built-in benchmark problems, their priors, and file I/O.

An FDM ("flat Dirichlet multinomial") distribution draws an MDP by sampling every transition row
``P(s, a, ·) ~ Dirichlet(theta[s, a, ·])``; rewards ``R[s, a, s']`` and the initial state are
fixed. Zero concentrations give exactly zero probability, so a drawn MDP keeps the support of
``theta``.

The built-ins reproduce the original BBRL data files exactly (SPEC 1.3: the files, not the paper's
appendix, are authoritative) and are named by the original's short names everywhere a user types a
distribution: ``GC``, ``GDL``, ``Grid`` and their uniform (inaccurate) priors ``UGC``, ``UGDL``,
``UGrid``. Their names, long names and the uniform-prior rule are the core's problem registry's
(:mod:`bbrl.problems`).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from .. import _core, problems
from .. import names as name_rule
from ..fileio import json_document_bytes, parse_json_document, read_file_bytes, regular_file, write_atomic
from . import bbrl_format
from . import compact as compact_table

__all__ = [
    "FDM",
    "builtin_name",
    "generalized_chain",
    "generalized_double_loop",
    "get",
    "grid",
    "load",
    "names",
]

FORMAT_NAME = "bbrl-fdm"
#: The version written: 2, ``theta`` and ``rewards`` in the compact form of
#: :mod:`bbrl.distributions.compact`. Version 1 (nested lists) is read as well.
FORMAT_VERSION = 2
#: The versions read.
READ_VERSIONS = (1, 2)


def _as_table(value: Any, name: str) -> np.ndarray:
    try:
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of numbers: {exc}") from None
    if array.ndim != 3 or array.shape[0] != array.shape[2] or 0 in array.shape:
        raise ValueError(f"{name} must have shape (S, A, S) with S, A >= 1, got {array.shape}")
    return array


def _check_initial_state(initial_state: Any, n_states: int) -> int | None:
    if initial_state is None:
        return None
    if isinstance(initial_state, bool) or not isinstance(initial_state, (int, np.integer)):
        raise TypeError(f"initial_state must be an int or None, got {type(initial_state).__name__}")
    if not 0 <= initial_state < n_states:
        raise ValueError(f"initial_state {initial_state} is out of range: allowed 0 to {n_states - 1}")
    return int(initial_state)


class FDM:
    """A distribution over MDPs with S states and A actions.

    Args:
        theta: Dirichlet concentrations, shape (S, A, S), finite and >= 0, with at least one
            positive entry per (s, a) row.
        rewards: deterministic rewards R[s, a, s'], shape (S, A, S), finite.
        initial_state: the state every trajectory starts in, or ``None`` for a uniformly random
            state at each reset (or one drawn from ``start_law``).
        name: a short name (used in tables and file names), e.g. ``"GC"``.
        long_name: a descriptive name; defaults to ``name``.
        start_law: for a start that is neither one state nor uniform (a classic problem's, such as
            Taxi's), the probability of starting in each state, shape (S,), summing to 1; every
            trajectory then starts in a state drawn from it, and ``initial_state`` must be ``None``.
    """

    def __init__(
        self,
        theta: Any,
        rewards: Any,
        initial_state: int | None = 0,
        name: str = "custom",
        long_name: str | None = None,
        start_law: Any = None,
    ) -> None:
        theta_array = _as_table(theta, "theta")
        rewards_array = _as_table(rewards, "rewards")
        if rewards_array.shape != theta_array.shape:
            raise ValueError(f"rewards shape {rewards_array.shape} differs from theta shape {theta_array.shape}")
        if not isinstance(name, str) or not name:
            raise TypeError("name must be a non-empty string")
        start = _check_initial_state(initial_state, theta_array.shape[0])
        law = None if start_law is None else _start_law(start_law, start, theta_array.shape[0])
        # The core validates values (finite, >= 0, no all-zero row; the start law's) and names the offending entry.
        self._core = _core.Distribution(theta_array, rewards_array, -1 if start is None else start, law)
        theta_array.setflags(write=False)
        rewards_array.setflags(write=False)
        if law is not None:
            law.setflags(write=False)
        self._theta = theta_array
        self._rewards = rewards_array
        self._initial_state = start
        self._start_law = law
        self._name = name
        self._long_name = long_name or name

    @property
    def theta(self) -> np.ndarray:
        """Dirichlet concentrations, read-only float64 array of shape (S, A, S)."""
        return self._theta

    @property
    def rewards(self) -> np.ndarray:
        """Rewards R[s, a, s'], read-only float64 array of shape (S, A, S)."""
        return self._rewards

    @property
    def initial_state(self) -> int | None:
        """The start state of every trajectory (``None``: uniform at random, or drawn from
        :attr:`start_law` when there is one)."""
        return self._initial_state

    @property
    def start_law(self) -> np.ndarray | None:
        """The probability of starting in each state, read-only shape (S,), for a start that is
        neither one state nor uniform; ``None`` otherwise."""
        return self._start_law

    @property
    def name(self) -> str:
        return self._name

    @property
    def long_name(self) -> str:
        return self._long_name

    @property
    def n_states(self) -> int:
        return int(self._theta.shape[0])

    @property
    def n_actions(self) -> int:
        return int(self._theta.shape[1])

    @property
    def r_max(self) -> float:
        """The largest reward."""
        return float(self._rewards.max())

    def uniform(self) -> FDM:
        """The inaccurate prior of the paper: theta = 1 everywhere, same rewards and initial state
        (or start law), named by the problem registry's rule (``UGC``, "Uniform GChain distribution")."""
        return _from_tables(_core.uniform_prior(self._core, self._name, self._long_name), self._start_law)

    def default_horizon(self, gamma: float = 0.95, epsilon: float = 0.01) -> int:
        """The paper's horizon T = floor(log(epsilon (1 - gamma) / Rmax) / log(gamma)), in steps.

        Rewards beyond T are worth less than ``epsilon``. Gives 193 for GC and Grid and 161 for GDL
        at gamma = 0.95 (the paper's experiments pass T = 250 explicitly). At least 1.
        """
        if not 0 < gamma < 1:
            return 1
        r_max = float(np.abs(self._rewards).max())
        if r_max == 0:
            return 1
        return max(1, math.floor(math.log(epsilon * (1 - gamma) / r_max) / math.log(gamma)))

    def sample(self, seed: int = 0) -> np.ndarray:
        """Draws one MDP's transition table, shape (S, A, S), from this distribution."""
        return self._core.sample_transitions(_check_seed(seed))

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Writes the distribution in bbrl's JSON format (see docs/file-formats.md), atomically."""
        return write_atomic(path, json_document_bytes(self.to_document(compact=True)))

    def to_document(self, compact: bool = False) -> dict[str, Any]:
        """The JSON document of the distribution as a dict. ``compact``: the document :meth:`save`
        writes (also embedded in saved agents), format version 2, its tables in the compact form
        of :mod:`bbrl.distributions.compact`; otherwise version 1, nested lists, the document
        experiment fingerprints are taken of (so that they stay those of earlier versions)."""
        table = compact_table.encode_table if compact else np.ndarray.tolist
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION if compact else 1,
            "name": self._name,
            "long_name": self._long_name,
            "n_states": self.n_states,
            "n_actions": self.n_actions,
            "initial_state": self._initial_state,
            "theta": table(self._theta),
            "rewards": table(self._rewards),
            # Only where there is one: files of distributions without a start law are unchanged.
            **({} if self._start_law is None else {"start_law": self._start_law.tolist()}),
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FDM):
            return NotImplemented
        return (
            self._initial_state == other._initial_state
            and (self._start_law is None) == (other._start_law is None)
            and (self._start_law is None or np.array_equal(self._start_law, other._start_law))
            and np.array_equal(self._theta, other._theta)
            and np.array_equal(self._rewards, other._rewards)
        )

    __hash__ = None  # type: ignore[assignment]

    # An FDM is immutable (read-only arrays, frozen core): copies share it, pickles rebuild it. Python
    # agents keep their prior, and are deep-copied per test MDP and pickled to worker processes.
    def __copy__(self) -> FDM:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FDM:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (FDM, (self._theta, self._rewards, self._initial_state, self._name, self._long_name, self._start_law))

    def __repr__(self) -> str:
        return f"FDM(name={self._name!r}, S={self.n_states}, A={self.n_actions}, initial_state={self._initial_state})"


def _start_law(value: Any, initial_state: int | None, n_states: int) -> np.ndarray:
    if initial_state is not None:
        raise ValueError("a distribution with a start law has no initial state: give initial_state=None")
    try:
        law = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"start_law must be an array of numbers: {exc}") from None
    if law.shape != (n_states,):
        raise ValueError(f"start_law must have shape ({n_states},), got {law.shape}")
    return law


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    return int(seed)


# ----------------------------------------------------------------------------------------------
# Built-in problems (SPEC 1.3), constructed in code; a test checks them against the original files.


def _from_tables(tables: tuple[Any, Any, int, str, str], start_law: Any = None) -> FDM:
    theta, rewards, initial_state, name, long_name = tables
    return FDM(theta, rewards, None if initial_state < 0 else initial_state, name, long_name, start_law)


def _builtin(name: str) -> FDM:
    # The tables and names are the core's problem registry's (rust/core/src/problems/), the single
    # source of the built-ins.
    return _from_tables(_core.problem_distribution(name))


def generalized_chain() -> FDM:
    """GC, the Generalised Chain: 5 states, 3 actions. From state x the agent reaches x + 1 (state
    4 stays) or falls back to 0; reward 2 on reaching 0 and 10 on reaching 4. The three actions
    share one prior, so which action is the "forward" one is learned."""
    return _builtin("GC")


def generalized_double_loop() -> FDM:
    """GDL, the Generalised Double-Loop: 9 states, 2 actions. From 0 the loop 0→1→2→3→4→0 pays 1;
    the loop 0→5→6→7→8→0 pays 2, but states 5 to 7 may fall back to 0."""
    return _builtin("GDL")


def grid() -> FDM:
    """Grid: 5x5 cells, state 5 * row + col, actions 0 = left, 1 = right, 2 = up, 3 = down (the
    original file's order). A move succeeds or leaves the agent in place; moving down from 19 or
    right from 23 may instead reach the goal, which pays 10 and teleports to 0."""
    return _builtin("Grid")


def names() -> list[str]:
    """The short names :func:`get` accepts, from the problem registry: each distribution problem
    and its uniform prior (GC, UGC, GDL, UGDL, Grid, UGrid)."""
    return list(problems.prior_names())


def builtin_name(name: str) -> str | None:
    """The registry's spelling of a built-in distribution's name (case, ``-`` and ``_`` ignored:
    :mod:`bbrl.names`), or None when ``name`` names none."""
    return name_rule.find(names(), name)


def get(name: str) -> FDM:
    """A built-in distribution by its original short name (``GC``, ``UGC``, ``Grid``...), matched
    by the one name rule (:func:`builtin_name`), or a distribution file by path."""
    if not isinstance(name, str):
        raise TypeError(f"a distribution name must be a string, got {type(name).__name__}")
    key = builtin_name(name)
    if key is not None:
        return _builtin(key)
    if os.path.sep in name or Path(name).suffix:
        return load(name)
    raise ValueError(f"unknown distribution {name!r}; built-ins: {', '.join(names())} (or a file path)")


def load(path: str | os.PathLike[str]) -> FDM:
    """Reads a distribution: bbrl's JSON format, or the original BBRL text format (plain or
    zlib-compressed). Raises ``FileNotFoundError`` for a missing file and ``ValueError`` naming
    the problem for a truncated or unreadable one, or a path that is not a regular file (a
    directory, a FIFO, a device: :func:`bbrl.fileio.regular_file`)."""
    file = regular_file(path, "distribution file")
    data = read_file_bytes(file, "distribution file", bbrl_format.MAX_TEXT_BYTES)
    if not data.strip():
        raise ValueError(
            f"distribution file {str(file)!r} is empty: expected bbrl's JSON distribution format or the original "
            "BBRL text format"
        )
    if data.lstrip().startswith(b"{"):
        return from_document(parse_json_document(data, str(file)), str(file))
    parsed = bbrl_format.parse(bbrl_format.decode(data, str(file)), str(file))
    return FDM(parsed.theta, parsed.rewards, parsed.initial_state, parsed.short_name, parsed.long_name)


def from_document(document: Any, source: str) -> FDM:
    """A distribution from the JSON document of :meth:`FDM.to_document`; errors name ``source``."""
    if not isinstance(document, dict) or document.get("format") != FORMAT_NAME:
        raise ValueError(f'{source}: not a bbrl distribution file (missing "format": "{FORMAT_NAME}")')
    version = document.get("version")
    if isinstance(version, bool) or version not in READ_VERSIONS:
        raise ValueError(f"{source}: unsupported format version {version!r}")
    missing = [k for k in ("name", "theta", "rewards", "initial_state") if k not in document]
    if missing:
        raise ValueError(f"{source}: missing field(s) {', '.join(missing)}")
    try:
        if version == 1:
            theta, rewards = document["theta"], document["rewards"]
        else:
            theta = compact_table.decode_table(document["theta"], "theta")
            rewards = compact_table.decode_table(document["rewards"], "rewards")
        return FDM(
            theta,
            rewards,
            document["initial_state"],
            document["name"],
            document.get("long_name"),
            document.get("start_law"),
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{source}: {exc}") from None
