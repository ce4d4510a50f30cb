"""Agent parameter records: validated at construction, built into a Rust agent when run.

Each class names one algorithm of the benchmark (SPEC 4) and holds only its parameters. The
default behaviour is always the intended algorithm; ``compat=True`` reproduces the original
library's quirks where the published numbers depend on them (see the README's deviations list).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

from . import _core
from ._checks import integer as _count
from ._fileio import write_atomic

__all__ = [
    "BAMCP",
    "BEB",
    "BFS3",
    "OPPSDS",
    "PSRL",
    "SBOSS",
    "Agent",
    "AgentError",
    "AgentSpec",
    "EGreedy",
    "Formula",
    "Optimal",
    "Random",
    "SoftMax",
    "TrainedAgent",
    "TrainedPythonAgent",
    "create",
    "kinds",
    "load",
    "offline_rng",
    "online_rng",
]


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return float(value)


def training_arguments(prior: Any, gamma: Any, horizon: Any, seed: Any) -> tuple[Any, float, int, int]:
    """Checks the arguments of ``train`` (built-in and Python agents alike): the prior as an FDM
    (a name such as ``"UGC"`` is looked up), gamma in [0, 1), horizon >= 1, seed in [0, 2**64)."""
    from .distributions import FDM, get

    prior_fdm = get(prior) if isinstance(prior, str) else prior
    if not isinstance(prior_fdm, FDM):
        raise TypeError(f"prior must be an FDM or a distribution name, got {type(prior).__name__}")
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0.0 <= gamma < 1.0:
        raise ValueError(f"gamma must be a number in [0, 1), got {gamma!r}")
    horizon = _count(horizon, "horizon", 1)
    seed = _count(seed, "seed", 0)
    if seed >= 2**64:
        raise ValueError(f"seed must be < 2**64, got {seed}")
    return prior_fdm, float(gamma), horizon, seed


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


@dataclass(frozen=True)
class AgentSpec:
    """Base class of the built-in agents: a kind understood by the Rust core plus parameters."""

    kind: ClassVar[str]
    display: ClassVar[str]

    @property
    def params(self) -> dict[str, Any]:
        """The parameters as passed to the core, e.g. ``{"epsilon": 0.1}``."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def label(self) -> str:
        """A readable, stable name with parameters, e.g. ``e-Greedy (epsilon=0.1)``."""
        shown = [f"{k}={v}" for k, v in self.params.items() if not (k == "compat" and v is False)]
        return f"{self.display} ({', '.join(shown)})" if shown else self.display

    def _core_params(self) -> dict[str, Any]:
        """The parameters as the Rust core's registry reads them (usually :attr:`params`)."""
        return self.params

    def _build(self) -> _core.Agent:
        return _core.Agent(self.kind, self._core_params())

    def train(self, prior: Any, gamma: float = 0.95, horizon: int = 250, seed: int = 0) -> TrainedAgent:
        """Offline learning on ``prior`` (an FDM or a name such as ``"UGC"``), timed in seconds.

        Uses the same random stream as :meth:`bbrl.Experiment.run` with the same seed, so
        ``experiment.run(agent.train(prior, g, T, s))`` equals ``experiment.run(agent, prior)`` for
        an experiment with discount g, horizon T and seed s. Train once, save, reuse.
        """
        prior_fdm, gamma, horizon, seed = training_arguments(prior, gamma, horizon, seed)
        core = self._build()
        seconds, cpu_seconds = core.learn_offline(prior_fdm._core, gamma, horizon, seed)
        return TrainedAgent(self, core, prior_fdm, gamma, horizon, seed, seconds, cpu_seconds)


@dataclass(frozen=True)
class Random(AgentSpec):
    """Uniformly random actions (SPEC 4.1)."""

    kind: ClassVar[str] = "random"
    display: ClassVar[str] = "Random"


@dataclass(frozen=True)
class EGreedy(AgentSpec):
    """e-Greedy on the posterior-mean model (SPEC 4.3): with probability ``epsilon`` a uniformly
    random action, otherwise greedy on Q (random ties). Q is re-solved after every transition.

    Args:
        epsilon: exploration probability in [0, 1].
    """

    kind: ClassVar[str] = "egreedy"
    display: ClassVar[str] = "e-Greedy"
    epsilon: float

    def __post_init__(self) -> None:
        value = _number(self.epsilon, "epsilon")
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {value}")
        object.__setattr__(self, "epsilon", value)


@dataclass(frozen=True)
class SoftMax(AgentSpec):
    """Soft-max (Boltzmann) exploration on the posterior-mean model's Q (SPEC 4.4).

    Args:
        tau: temperature, > 0.
        compat: reproduce the original's unnormalised scores, which make it always play action 0
            on the benchmark's non-negative rewards (the published Soft-max numbers).
    """

    kind: ClassVar[str] = "softmax"
    display: ClassVar[str] = "Soft-max"
    tau: float
    compat: bool = False

    def __post_init__(self) -> None:
        value = _number(self.tau, "tau")
        if value <= 0.0:
            raise ValueError(f"tau must be > 0, got {value}")
        object.__setattr__(self, "tau", value)
        _flag(self.compat, "compat")


@dataclass(frozen=True)
class BEB(AgentSpec):
    """Bayesian Exploration Bonus (Kolter & Ng 2009; SPEC 4.5): greedy on the mean model with
    rewards increased by ``beta / (1 + n(s, a))``, n counting prior pseudo-counts and observations.

    Args:
        beta: bonus coefficient, >= 0.
        compat: truncate beta to an integer as the original does (0.5 acts as 0, 2.5 as 2).
    """

    kind: ClassVar[str] = "beb"
    display: ClassVar[str] = "BEB"
    beta: float
    compat: bool = False

    def __post_init__(self) -> None:
        value = _number(self.beta, "beta")
        if value < 0.0:
            raise ValueError(f"beta must be >= 0, got {value}")
        object.__setattr__(self, "beta", value)
        _flag(self.compat, "compat")


@dataclass(frozen=True)
class BAMCP(AgentSpec):
    """Bayes-adaptive Monte-Carlo planning (Guez et al. 2012; SPEC 4.6): ``k`` simulations per
    decision, each in one model drawn from the posterior (root sampling, the model integrated
    out: next states from the per-simulation posterior predictive, the same distribution), UCB
    with c = 3, rollouts half random and half greedy on a Q-learned table, cut at ``depth``.

    Args:
        k: simulations per decision, >= 1.
        depth: maximal simulated depth (tree plus rollout), in steps, >= 1.
    """

    kind: ClassVar[str] = "bamcp"
    display: ClassVar[str] = "BAMCP"
    k: int
    depth: int

    def __post_init__(self) -> None:
        _count(self.k, "k", 1)
        _count(self.depth, "depth", 1)


@dataclass(frozen=True)
class BFS3(AgentSpec):
    """Bayesian forward search sparse sampling (Asmuth & Littman 2011; SPEC 4.7): for each action,
    ``c`` next states sampled from the posterior predictive, each valued by FSSS with max(1, k / c)
    rollouts to ``depth``; the upper bound of each root is used.

    Args:
        k: total rollout budget per action, >= 1.
        c: branching factor (samples per action), >= 1.
        depth: search depth, in steps, >= 1.
    """

    kind: ClassVar[str] = "bfs3"
    display: ClassVar[str] = "BFS3"
    k: int
    c: int
    depth: int

    def __post_init__(self) -> None:
        _count(self.k, "k", 1)
        _count(self.c, "c", 1)
        _count(self.depth, "depth", 1)


@dataclass(frozen=True)
class SBOSS(AgentSpec):
    """Smarter Best of Sampled Set (Castro & Precup 2010; SPEC 4.8): merges K(s, a) posterior
    samples per pair, K = max_y ceil(sigma^2 / epsilon), and resamples when the posterior has moved
    by more than ``delta`` standard deviations since the last sampling.

    Args:
        epsilon: sampling precision, > 0 (smaller means more samples).
        delta: resampling threshold, >= 0.
        compat: reproduce the original exactly (resampling frozen by a NaN wherever the prior has
            a zero, zero-sample pairs as INT_MIN-reward dummies, half-copied snapshot), which the
            published SBOSS numbers depend on.
    """

    kind: ClassVar[str] = "sboss"
    display: ClassVar[str] = "SBOSS"
    epsilon: float
    delta: float
    compat: bool = False

    def __post_init__(self) -> None:
        epsilon = _number(self.epsilon, "epsilon")
        if epsilon <= 0.0:
            raise ValueError(f"epsilon must be > 0, got {epsilon}")
        delta = _number(self.delta, "delta")
        if delta < 0.0:
            raise ValueError(f"delta must be >= 0, got {delta}")
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "delta", delta)
        _flag(self.compat, "compat")


@dataclass(frozen=True)
class PSRL(AgentSpec):
    """Posterior sampling (Strens 2000; Osband et al. 2013): after every transition, draw ``k``
    models from the Dirichlet posterior, solve them, and act greedily for one of them chosen
    uniformly (the revealed action distribution is the mixture).

    Args:
        k: number of posterior models per step, >= 1 (1 is standard PSRL).
    """

    kind: ClassVar[str] = "psrl"
    display: ClassVar[str] = "PSRL"
    k: int = 1

    def __post_init__(self) -> None:
        _count(self.k, "k", 1)


@dataclass(frozen=True)
class Optimal(AgentSpec):
    """An oracle that solves the true test MDP (SPEC 4.10): an upper reference line, and the only
    agent that sees the true MDP."""

    kind: ClassVar[str] = "optimal"
    display: ClassVar[str] = "Optimal (oracle)"


@dataclass(frozen=True)
class Formula(AgentSpec):
    """Acts by the argmax over actions of an index formula of the Q-variables (SPEC 4.9.3).

    Args:
        formula: RPN (``"X2 X0 DIV"``) or infix (``"QUniform / QMean"``); stored as RPN. The paper's
            names (Q0 = QUniform, Q1 = QSelf, Q2 = QMean) need ``formulas.parse(text, paper_names=True)``.
        compat: abort the run when the formula cannot be evaluated (LN of a value <= 0, division by
            zero...), as the original; by default such an action's index counts as -inf.
    """

    kind: ClassVar[str] = "formula"
    display: ClassVar[str] = "Formula"
    formula: str
    compat: bool = False

    def __post_init__(self) -> None:
        from .formulas import parse

        object.__setattr__(self, "formula", parse(self.formula).rpn)
        _flag(self.compat, "compat")


@dataclass(frozen=True)
class OPPSDS(AgentSpec):
    """OPPS-DS (Castronovo et al. 2012; SPEC 4.9.5): offline, UCB1 over a set of index formulas
    with a budget of ``n_draws`` trajectories on MDPs drawn from the prior; online, the most
    pulled formula. After training, the chosen formula is :attr:`TrainedAgent.formula`.

    Args:
        formula_set: 2 to 6 for the shipped F2 to F6, or a list of formulas (RPN or infix).
        n_draws: UCB1 budget, in trajectories (>= 1).
        c: UCB1 exploration constant (>= 0; the paper's 660 on raw returns).
        compat: abort runs on formula errors as the original (see :class:`Formula`).
    """

    kind: ClassVar[str] = "oppsds"
    display: ClassVar[str] = "OPPS-DS"
    formula_set: int | tuple[str, ...]
    n_draws: int
    c: float = 660.0
    compat: bool = False

    def __post_init__(self) -> None:
        from .formulas import SHIPPED_SIZES, parse

        if isinstance(self.formula_set, str):
            # "F5" or "5" name a shipped set; otherwise formulas separated by ';' or newlines.
            text = self.formula_set.strip()
            name = text[1:] if text[:1] in ("F", "f") else text
            if name.isdigit():
                object.__setattr__(self, "formula_set", int(name))
            else:
                parts = [p.strip() for p in text.replace("\n", ";").split(";") if p.strip()]
                object.__setattr__(self, "formula_set", tuple(parts))
        if isinstance(self.formula_set, int) and not isinstance(self.formula_set, bool):
            if self.formula_set not in SHIPPED_SIZES:
                raise ValueError(f"formula_set must be 2 to 6 (F2 to F6) or a list of formulas, got {self.formula_set}")
        elif isinstance(self.formula_set, (list, tuple)) and self.formula_set:
            object.__setattr__(self, "formula_set", tuple(parse(f).rpn for f in self.formula_set))
        else:
            raise ValueError("formula_set must be 2 to 6 (F2 to F6) or a non-empty list of formulas")
        _count(self.n_draws, "n_draws", 1)
        c = _number(self.c, "c")
        if c < 0:
            raise ValueError(f"c must be >= 0, got {c}")
        object.__setattr__(self, "c", c)
        _flag(self.compat, "compat")

    @property
    def label(self) -> str:
        shown = f"F{self.formula_set}" if isinstance(self.formula_set, int) else f"{len(self.formula_set)} formulas"
        extra = ", compat=True" if self.compat else ""
        return f"OPPS-DS ({shown}, n_draws={self.n_draws}, c={self.c:g}{extra})"

    def _core_params(self) -> dict[str, Any]:
        formulas = f"F{self.formula_set}" if isinstance(self.formula_set, int) else "\n".join(self.formula_set)
        return {"formulas": formulas, "n_draws": self.n_draws, "c": self.c, "compat": self.compat}


class TrainedAgent:
    """An agent after offline learning on a prior: run it on experiments (no retraining), inspect
    what it learned (:attr:`details`, :attr:`formula`), save it and load it back.

    Attributes:
        spec: the parameters it was built from.
        prior: the distribution it learned on.
        offline_seconds: wall time of offline learning, in seconds.
        offline_cpu_seconds: CPU time of offline learning (every thread of the process), in
            seconds; NaN when unknown (an agent file written before it was recorded). Both times
            are exactly 0 for agents that learn nothing offline.
    """

    def __init__(
        self,
        spec: AgentSpec,
        core: _core.Agent,
        prior: Any,
        gamma: float,
        horizon: int,
        seed: int,
        offline_seconds: float,
        offline_cpu_seconds: float = math.nan,
    ) -> None:
        self.spec = spec
        self._core = core
        self.prior = prior
        self.gamma = gamma
        self.horizon = horizon
        self.seed = seed
        self.offline_seconds = offline_seconds
        self.offline_cpu_seconds = offline_cpu_seconds

    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def training(self) -> dict[str, Any]:
        """The setting it was trained in: prior name, gamma, horizon (steps) and seed."""
        return {"prior": self.prior.name, "gamma": self.gamma, "horizon": self.horizon, "seed": self.seed}

    def check_setting(
        self, prior: Any = None, gamma: float | None = None, horizon: int | None = None, allow_transfer: bool = False
    ) -> None:
        """Refuses a use in another setting than the training one: another prior always; another
        gamma or horizon unless ``allow_transfer`` (a deliberate transfer study).

        Raises:
            ValueError: naming both values.
        """
        from .distributions import get

        if prior is not None:
            other = get(prior) if isinstance(prior, str) else prior
            if other != self.prior:
                name = getattr(other, "name", repr(other))
                raise ValueError(
                    f"agent {self.label!r} was trained on prior {self.prior.name!r}, not {name!r}; train it on that "
                    "prior instead"
                )
        if allow_transfer:
            return
        for what, trained_value, value in (("gamma", self.gamma, gamma), ("horizon", self.horizon, horizon)):
            if value is not None and value != trained_value:
                raise ValueError(
                    f"agent {self.label!r} was trained with {what} = {trained_value}, but this run uses {what} = "
                    f"{value}; retrain it, or pass allow_transfer=True for a deliberate transfer study"
                )

    def __getstate__(self) -> dict[str, Any]:
        # The core agent is rebuilt on unpickling: from its saved form (OPPS-DS's search result) or
        # by retraining from the recorded seed, which is deterministic (as agents.load does).
        state = dict(self.__dict__)
        core = state.pop("_core")
        state["_saved_text"] = core.saved_text() if core is not None else None
        state["_has_core"] = core is not None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        text, has_core = state.pop("_saved_text"), state.pop("_has_core")
        self.__dict__.update(state)
        if not has_core:
            self._core = None  # a Python agent: the trained object itself was pickled
        elif text is not None:
            p = self.prior
            self._core = _core.Agent.load(text, p.n_states, p.n_actions, self.gamma, self.horizon)
        else:
            self._core = self.spec._build()
            self._core.learn_offline(self.prior._core, self.gamma, self.horizon, self.seed)

    @property
    def kind(self) -> str:
        """The agent's kind, e.g. ``"egreedy"`` (a Python agent's ``kind``)."""
        return self.spec.kind

    @property
    def params(self) -> dict[str, Any]:
        """The agent's parameters, as :attr:`AgentSpec.params`."""
        return self.spec.params

    @property
    def details(self) -> dict[str, str]:
        """What offline learning decided, e.g. ``{"formula": "X0 X2 DIV", "formula_infix": ...}``."""
        return dict(self._core.details)

    @property
    def formula(self) -> str | None:
        """OPPS-DS's chosen formula (RPN), ``None`` for other agents."""
        return self.details.get("formula")

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Writes the trained agent as JSON (parameters, prior, setting, learned state), atomically.

        Agents whose training is cheap and deterministic store no state and are retrained from the
        recorded seed on :func:`load`; OPPS-DS stores its search result.
        """
        return self._write(path, state=self._core.saved_text())

    def _write(self, path: str | os.PathLike[str], **extra: Any) -> Path:
        """Writes the agent file: the fields every trained agent has, plus ``extra`` ones."""
        document = {
            "format": "bbrl-agent",
            "version": 1,
            "kind": self.spec.kind,
            "params": _jsonable(self.spec.params),
            "label": self.label,
            "gamma": self.gamma,
            "horizon": self.horizon,
            "seed": self.seed,
            "offline_seconds": self.offline_seconds,
            "offline_cpu_seconds": None if math.isnan(self.offline_cpu_seconds) else self.offline_cpu_seconds,
            "details": self.details,
            "prior": self.prior.to_document(),
            **extra,
        }
        return write_atomic(path, (json.dumps(document, indent=1) + "\n").encode())

    def __repr__(self) -> str:
        extra = f", formula={self.formula!r}" if self.formula else ""
        return f"TrainedAgent({self.label}, prior={self.prior.name!r}, offline={self.offline_seconds:.3g} s{extra})"


def _jsonable(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters for a JSON file: tuples as lists, anything JSON cannot hold as its repr."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        if isinstance(v, tuple):
            v = list(v)
        try:
            json.dumps(v)
        except TypeError:
            v = repr(v)
        out[str(k)] = v
    return out


def load(path: str | os.PathLike[str]) -> TrainedAgent:
    """Reads an agent written by :meth:`TrainedAgent.save`."""
    from .distributions import from_document

    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"agent file {str(file)!r} not found")
    try:
        document = json.loads(file.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{file}: invalid JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != "bbrl-agent" or document.get("version") != 1:
        raise ValueError(f"{file}: not a bbrl agent file (format bbrl-agent, version 1)")
    if isinstance(document.get("python"), dict):
        try:
            prior = from_document(document["prior"], str(file))
            return TrainedPythonAgent._from_document(document, prior, str(file))
        except (KeyError, AttributeError, TypeError) as exc:
            raise ValueError(f"{file}: malformed agent file: {exc}") from None
    try:
        params = {k: tuple(v) if isinstance(v, list) else v for k, v in document["params"].items()}
        spec = create(document["kind"], params)
        prior = from_document(document["prior"], str(file))
        gamma, horizon, seed = document["gamma"], document["horizon"], document["seed"]
        state = document.get("state")
    except (KeyError, AttributeError, TypeError) as exc:
        raise ValueError(f"{file}: malformed agent file: {exc}") from None
    if state is None:
        retrained = spec.train(prior, gamma, horizon, seed)
        retrained.offline_seconds = float(document.get("offline_seconds", retrained.offline_seconds))
        retrained.offline_cpu_seconds = _recorded_cpu(document, retrained.offline_cpu_seconds)
        return retrained
    core = _core.Agent.load(state, prior.n_states, prior.n_actions, gamma, horizon)
    offline = float(document.get("offline_seconds", 0.0))
    return TrainedAgent(spec, core, prior, gamma, horizon, seed, offline, _recorded_cpu(document, math.nan))


def _recorded_cpu(document: dict[str, Any], default: float) -> float:
    """The offline CPU time an agent file records (``None`` or absent: ``default``)."""
    value = document.get("offline_cpu_seconds")
    return default if value is None else float(value)


_KINDS: dict[str, type[AgentSpec]] = {
    cls.kind: cls for cls in (Random, EGreedy, SoftMax, BEB, BAMCP, BFS3, SBOSS, PSRL, Optimal, Formula, OPPSDS)
}


def kinds() -> dict[str, type[AgentSpec]]:
    """The built-in agents by command-line name (``random``, ``egreedy``, ``softmax``, ``beb``...)."""
    return dict(_KINDS)


def create(kind: str, params: Mapping[str, Any] | None = None) -> AgentSpec:
    """Builds an agent by its command-line name, e.g. ``create("egreedy", {"epsilon": 0.1})``."""
    cls = _KINDS.get(kind.lower().replace("-", "").replace("_", ""))
    if cls is None:
        raise ValueError(f"unknown agent {kind!r}; known agents: {', '.join(_KINDS)}")
    params = dict(params or {})
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"agent {kind!r} has no parameter(s) {', '.join(unknown)}; its parameters: {sorted(known)}")
    try:
        return cls(**params)
    except TypeError as exc:
        if "missing" in str(exc):
            missing = sorted(known - set(params))
            raise ValueError(f"agent {kind!r} needs parameter(s) {', '.join(missing)}") from None
        raise


# Agents written in Python (defined apart; they need TrainedAgent above).
from ._python_agents import Agent, AgentError, TrainedPythonAgent, offline_rng, online_rng  # noqa: E402
