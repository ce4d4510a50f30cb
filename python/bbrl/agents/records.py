"""Agent parameter records: validated at construction, built into a Rust agent when run.

Each class names one algorithm of the benchmark (SPEC 4) and holds only its parameters. The
default behaviour is always the intended algorithm; ``compat=True`` reproduces the original
library's quirks where the published numbers depend on them (see the README's deviations list).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

from .. import _core
from ..checks import flag as _flag
from ..checks import integer as _count
from ..checks import number as _number
from ..formulas import SHIPPED_SIZES, parse
from .trained import TrainedAgent, training_arguments

__all__ = [
    "BAMCP",
    "BEB",
    "BFS3",
    "OPPSDS",
    "PSRL",
    "SBOSS",
    "AgentSpec",
    "EGreedy",
    "Formula",
    "Optimal",
    "Random",
    "SoftMax",
]


@dataclass(frozen=True)
class AgentSpec:
    """Base class of the built-in agents: a kind understood by the Rust core plus parameters."""

    kind: ClassVar[str]
    display: ClassVar[str]
    #: Parameters the label leaves out at these values: a setting added after the kind's labels were
    #: published (its default then reads as the label always did).
    quiet: ClassVar[dict[str, Any]] = {}

    @property
    def params(self) -> dict[str, Any]:
        """The parameters as passed to the core, e.g. ``{"epsilon": 0.1}``."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def label(self) -> str:
        """A readable, stable name with parameters, e.g. ``e-Greedy (epsilon=0.1)``."""
        shown = [
            f"{k}={v}"
            for k, v in self.params.items()
            if not (k == "compat" and v is False) and not (k in self.quiet and v == self.quiet[k])
        ]
        return f"{self.display} ({', '.join(shown)})" if shown else self.display

    def core_params(self) -> dict[str, Any]:
        """The parameters as the Rust core's registry reads them (usually :attr:`params`)."""
        return self.params

    def build_core(self) -> _core.Agent:
        return _core.Agent(self.kind, self.core_params())

    def train(self, prior: Any, gamma: float = 0.95, horizon: int = 250, seed: int = 0) -> TrainedAgent:
        """Offline learning on ``prior`` (an FDM or a name such as ``"UGC"``), timed in seconds.

        Uses the same random stream as :meth:`bbrl.Experiment.run` with the same seed, so
        ``experiment.run(agent.train(prior, g, T, s))`` equals ``experiment.run(agent, prior)`` for
        an experiment with discount g, horizon T and seed s. Train once, save, reuse.
        """
        prior_fdm, gamma, horizon, seed = training_arguments(prior, gamma, horizon, seed)
        core = self.build_core()
        seconds, cpu_seconds, work = core.learn_offline(prior_fdm._core, gamma, horizon, seed)
        return TrainedAgent(self, core, prior_fdm, gamma, horizon, seed, seconds, cpu_seconds, work)


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
        reference: ``"paper"``, or ``"tabularl"`` for TabulaRL's BEB (a MAP model with learned
            rewards, a bonus ``beta H / (1 + n)`` per step left, one H-stage plan per episode;
            docs/baselines.md, Reference settings); compat must then stay False.
    """

    kind: ClassVar[str] = "beb"
    display: ClassVar[str] = "BEB"
    quiet: ClassVar[dict[str, Any]] = {"reference": "paper"}
    beta: float
    compat: bool = False
    reference: str = "paper"

    def __post_init__(self) -> None:
        value = _number(self.beta, "beta")
        if value < 0.0:
            raise ValueError(f"beta must be >= 0, got {value}")
        object.__setattr__(self, "beta", value)
        _flag(self.compat, "compat")
        _reference(self, self.reference)


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
        reference: ``"paper"``; ``"tabularl-gaussian"`` for TabulaRL's GaussianPSRL (a MAP model
            with learned rewards perturbed by Gaussian draws once per episode, one H-stage plan per
            episode); ``"rlberry"`` for rlberry's PSRLAgent (one posterior draw per episode,
            Beta-Bernoulli rewards, a Dirichlet(1/S) prior); docs/baselines.md, Reference settings.
            k must be 1 with either.
    """

    kind: ClassVar[str] = "psrl"
    display: ClassVar[str] = "PSRL"
    quiet: ClassVar[dict[str, Any]] = {"reference": "paper"}
    k: int = 1
    reference: str = "paper"

    def __post_init__(self) -> None:
        _count(self.k, "k", 1)
        _reference(self, self.reference)


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

    def core_params(self) -> dict[str, Any]:
        formulas = f"F{self.formula_set}" if isinstance(self.formula_set, int) else "\n".join(self.formula_set)
        return {"formulas": formulas, "n_draws": self.n_draws, "c": self.c, "compat": self.compat}


def _reference(record: AgentSpec, reference: Any) -> None:
    """Checks a record's ``reference``: a string, and any other setting the core's builder refuses
    with it (its message names the parameters)."""
    if not isinstance(reference, str):
        raise TypeError(f"reference must be a string, got {reference!r}")
    if reference != "paper":
        record.build_core()
