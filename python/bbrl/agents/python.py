"""Agents written in Python ("bring your own agent"), run through the same protocol as the built-ins.

Stepping: the environment is stepped by the Rust core. A Python agent is wrapped on the Rust side in
an agent that calls its methods (with the GIL), so the same trajectory loop, the same test MDPs and
the same environment random streams serve built-in and Python agents, and Python executes no
per-step code except the agent's own.

Randomness (the seed rule of :mod:`bbrl.seeds`, stream ``(seed, purpose, index)``):

* offline: ``learn_offline`` gets ``seeds.generator(seed, "agent_offline", 0)``;
* online: on test MDP ``i``, ``act`` gets ``seeds.generator(seed, "agent_online", i)``
  (``numpy.random.default_rng(k)``, ``k`` the first draw of the agent's online stream), one
  Generator per task, made by the core when the task starts;
* the environment of MDP ``i`` uses the core's stream ``(seed, 2, i)``, as for every built-in agent;
* per episode: an agent whose ``start_episode`` takes a second argument ``rng`` gets, at every episode
  start, a new Generator ``numpy.random.default_rng(k)``, ``k`` the next 64-bit draw of the same
  online stream (the handle's), for the episode's own draws (e.g. K posterior samples). Under
  replay's ``runs=``, run ``i``'s stream is ``(seed, replay_agent, i)``: independent runs,
  reproducible whatever the number of worker processes, and restored with a snapshot.

Running them (in this process or on worker processes) is :mod:`bbrl.protocol.workers`.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .. import _core
from ..seeds import generator
from .file_format import recorded_work
from .trained import TrainedAgent, training_arguments

if TYPE_CHECKING:
    from ..distributions import FDM

__all__ = [
    "Agent",
    "AgentError",
    "TrainedPythonAgent",
    "UnsafeLoadWarning",
    "class_reference",
    "offline_rng",
    "online_rng",
    "resolve_class",
]


#: An agent failed (built-in or Python): the message names the agent and, in a run, the MDP and
#: the step; a Python agent's own exception is chained as the cause.
AgentError = _core.AgentError


def offline_rng(seed: int) -> np.random.Generator:
    """The Generator a Python agent's ``learn_offline`` receives: ``seeds.generator(seed,
    "agent_offline", 0)``."""
    return generator(seed, "agent_offline", 0)


def online_rng(seed: int, mdp_index: int) -> np.random.Generator:
    """The Generator a Python agent's ``act`` receives on test MDP ``mdp_index`` of an experiment
    with ``seed``: ``default_rng(k)``, ``k`` the first 64-bit draw of the agent's online stream
    ``(seed, agent_online, mdp_index)`` (a new one at every task start, drawn from that stream)."""
    return generator(seed, "agent_online", mdp_index)


class Agent:
    """Base class of agents written in Python: same life cycle as the built-in (Rust) agents.

    Subclass it and override :meth:`act` (and usually :meth:`learn_offline`, :meth:`start_task`
    and :meth:`observe`)::

        class Greedy(bbrl.agents.Agent):
            def learn_offline(self, prior, gamma, horizon, rng):
                super().learn_offline(prior, gamma, horizon, rng)   # keeps prior, gamma, horizon
            def start_task(self):
                self.posterior = bbrl.kernels.Posterior(self.prior)
            def act(self, state, rng):
                _, policy = bbrl.kernels.value_iteration(self.posterior.mean(), self.prior.rewards, self.gamma)
                return policy[state]
            def observe(self, state, action, reward, next_state):
                self.posterior.observe(state, action, next_state)

        run = bbrl.Experiment("GC", n_mdps=50).run(Greedy(), prior="UGC")

    Life cycle (the same for every evaluator, see :class:`bbrl.Stepper`): :meth:`learn_offline`
    once on the prior (timed: the offline time); :meth:`start_task` for every new unknown MDP
    (posterior := prior); :meth:`start_episode` for a new episode of the same task (knowledge
    kept); :meth:`act` and :meth:`observe`, where ``observe`` may follow an action the agent did
    not choose (replay feeds logged actions); :meth:`action_probabilities` is a pure query;
    :meth:`snapshot`/:meth:`restore` capture and bring back the agent's whole state. In the
    benchmark protocol, every test MDP gets a fresh copy of the trained agent, :meth:`start_task`,
    then ``T`` times :meth:`act` and :meth:`observe` (the online time is the wall time of the task
    start and the T decisions, as for the built-ins).

    Rules, checked at the boundary: ``act`` returns an ``int`` (NumPy integers are fine) in
    ``0..A``; all randomness comes from the ``rng`` arguments (so a seed reproduces a run); an
    exception fails the run with the agent's name, the MDP index and the step. To run on several
    worker processes (``threads`` > 1, the default on a multi-core machine), the trained agent must
    be picklable (define the class at module level of an importable module or of a script run as
    ``__main__``); it must always support ``copy.deepcopy``. To be saved, its :meth:`state` must hold
    data only (numbers, strings, lists, dicts, NumPy arrays, Generators, FDMs, Posteriors: see
    :mod:`bbrl.agents.state`); an agent file never holds code, and loading one never imports a module.

    Class attributes ``display`` (the name in tables; default: the class name) and ``kind`` (a
    stable identifier; default: the class name) may be overridden; ``learns_offline = False``
    declares that :meth:`learn_offline` computes nothing from the prior (the offline time is then
    0 by declaration, not a measurement of noise; also when the method is not overridden). :attr:`params` are the
    dataclass fields when the subclass is a dataclass, else ``{}``; override it to show parameters.
    """

    kind: ClassVar[str] = "python"
    display: ClassVar[str] = "Python agent"
    learns_offline: ClassVar[bool] = True
    #: Whether :meth:`start_episode` takes a Generator (``start_episode(self, state, rng)``): set
    #: from the method's signature when the class is defined.
    episode_rng: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "reset" in cls.__dict__ and "start_task" not in cls.__dict__:
            raise TypeError(
                f"{cls.__name__}.reset() is now called start_task(): rename the method "
                "(start_episode(state) is the new per-episode hook)"
            )
        if "start_episode" in cls.__dict__:
            cls.episode_rng = _takes_rng(cls.__dict__["start_episode"])
        if "kind" not in cls.__dict__:
            cls.kind = cls.__name__
        if "display" not in cls.__dict__:
            cls.display = cls.__name__

    # -- identification (the same attributes as the built-in AgentSpec) -----------------------

    @property
    def params(self) -> dict[str, Any]:
        """The agent's parameters (the dataclass fields of a dataclass subclass, else ``{}``)."""
        if dataclasses.is_dataclass(self):
            return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}
        return {}

    @property
    def label(self) -> str:
        """A readable name with parameters, e.g. ``MyPSRL (k=1)``."""
        shown = [f"{k}={v}" for k, v in self.params.items()]
        return f"{self.display} ({', '.join(shown)})" if shown else self.display

    # -- the protocol ---------------------------------------------------------------------------

    def learn_offline(self, prior: FDM, gamma: float, horizon: int, rng: np.random.Generator) -> None:
        """Offline learning on the prior (timed). The default keeps ``self.prior``, ``self.gamma``,
        ``self.horizon``, ``self.n_states`` and ``self.n_actions``; call it with ``super()``."""
        self.prior = prior
        self.gamma = gamma
        self.horizon = horizon
        self.n_states = prior.n_states
        self.n_actions = prior.n_actions

    def start_task(self) -> None:
        """A new unknown MDP: forget what was learned online (e.g. posterior := prior)."""

    def start_episode(self, state: int) -> None:
        """A new episode of the same task, starting in ``state``: keep what was learned (e.g. draw
        new posterior models here). The default does nothing.

        An override may take a second argument, ``start_episode(self, state, rng)``: it then gets a
        new ``numpy.random.Generator`` for every episode, drawn from the handle's stream (see the
        module docstring), which makes per-episode draws reproducible and independent between
        replay runs."""

    def act(self, state: int, rng: np.random.Generator) -> int:
        """The action to take in ``state``, an int in ``0..A``."""
        raise NotImplementedError(f"{type(self).__name__} must implement act(state, rng)")

    def observe(self, state: int, action: int, reward: float, next_state: int) -> None:
        """Online learning from one real transition."""

    def action_probabilities(self, state: int) -> np.ndarray:
        """Optional: pi(a | state) given the agent's current knowledge, shape (A,), summing to 1.
        Must agree with the distribution of :meth:`act` (checked by :func:`bbrl.testing.check_agent`)."""
        raise NotImplementedError

    def snapshot(self) -> Any:
        """Everything the agent's future depends on (the default: a deep copy of its attributes).
        Override with :meth:`restore` for a cheaper copy of a large agent."""
        return copy.deepcopy(self.__dict__)

    def restore(self, snapshot: Any) -> None:
        """Brings back a :meth:`snapshot`, which stays usable for further restores."""
        self.__dict__.clear()
        self.__dict__.update(copy.deepcopy(snapshot))

    def details(self) -> dict[str, str]:
        """Optional: what offline learning decided, for result tables (e.g. ``{"formula": ...}``)."""
        return {}

    # -- saving as data (the agent file; see bbrl.agents.state) ---------------------------------

    def state(self) -> dict[str, Any]:
        """What an agent file stores of this agent: by default its attributes (for a dataclass, its
        fields and every attribute set since). Override it with :meth:`from_state` when an attribute
        is not data (see :mod:`bbrl.agents.state` for the types that are)."""
        try:
            return dict(vars(self))
        except TypeError:
            raise TypeError(
                f"{type(self).__name__} has no __dict__ (__slots__?): give it state() and from_state() methods"
            ) from None

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Agent:
        """The agent :meth:`state` describes, without calling ``__init__`` (the default sets the
        attributes back)."""
        agent = cls.__new__(cls)
        agent.__dict__.update(state)
        return agent

    # -- like AgentSpec.train -------------------------------------------------------------------

    def train(self, prior: Any, gamma: float = 0.95, horizon: int = 250, seed: int = 0) -> TrainedPythonAgent:
        """Offline learning on ``prior`` (an FDM or a name such as ``"UGC"``) on a deep copy of this
        agent, timed; ``learn_offline`` gets :func:`offline_rng` ``(seed)``. As for the built-ins,
        ``experiment.run(agent.train(prior, g, T, s))`` equals ``experiment.run(agent, prior)`` for
        an experiment with discount g, horizon T and seed s."""
        prior_fdm, gamma, horizon, seed = training_arguments(prior, gamma, horizon, seed)
        spec = _deepcopy(self, "train")
        agent = _deepcopy(self, "train")
        rng = offline_rng(seed)
        start, cpu_start = time.perf_counter(), time.thread_time()
        try:
            agent.learn_offline(prior_fdm, gamma, horizon, rng)
        except Exception as exc:
            raise AgentError(f"agent '{self.label}' failed in learn_offline: {type(exc).__name__}: {exc}") from exc
        seconds, cpu_seconds = time.perf_counter() - start, time.thread_time() - cpu_start
        # Python code's work is not counted in the core's units: unknown unless nothing is learned.
        work: list[int] | None = None
        if type(agent).learn_offline is Agent.learn_offline or not type(agent).learns_offline:
            # The base method only keeps the prior and the setting: nothing learned, time zero by
            # declaration (as the built-in agents that learn nothing offline).
            seconds = cpu_seconds = 0.0
            work = [0] * len(_core.work_units())
        return TrainedPythonAgent(spec, agent, prior_fdm, gamma, horizon, seed, seconds, cpu_seconds, work)


def _takes_rng(method: Any) -> bool:
    """Whether ``start_episode`` takes a second argument (after ``self`` and ``state``)."""
    try:
        parameters = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 3 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


def _deepcopy(agent: Any, what: str) -> Any:
    try:
        return copy.deepcopy(agent)
    except Exception as exc:
        raise TypeError(
            f"{what}: agent {type(agent).__name__} cannot be deep-copied (copy.deepcopy: {exc}); "
            "a Python agent is copied for every test MDP, so it must support copy.deepcopy"
        ) from exc


class TrainedPythonAgent(TrainedAgent):
    """A Python agent after offline learning: what :meth:`Agent.train` returns and
    :meth:`bbrl.Experiment.run` accepts. Same attributes as :class:`~bbrl.agents.TrainedAgent`
    (``label``, ``kind``, ``params``, ``prior``, ``gamma``, ``horizon``, ``seed``,
    ``offline_seconds``, ``details``, ``save``); ``agent`` is the trained Python object.

    :meth:`save` writes the trained agent's :meth:`Agent.state` (and its untrained parameters') as
    data into bbrl's JSON agent file, with the class's name; :func:`bbrl.agents.load` rebuilds it
    with :meth:`Agent.from_state` of a class the caller has imported or passes (``agent_class=``):
    loading never imports a module and never unpickles, unless asked to for an older file
    (``allow_pickle=True``).
    """

    def __init__(
        self,
        spec: Agent,
        agent: Agent,
        prior: Any,
        gamma: float,
        horizon: int,
        seed: int,
        offline_seconds: float,
        offline_cpu_seconds: float = float("nan"),
        offline_work: Sequence[int] | None = None,
    ) -> None:
        # No core agent: the trained Python object itself runs (methods using it are overridden).
        super().__init__(
            spec,
            None,  # type: ignore[arg-type]
            prior,
            gamma,
            horizon,
            seed,
            offline_seconds,
            offline_cpu_seconds,
            offline_work,
        )
        self.agent = agent

    @property
    def details(self) -> dict[str, str]:
        try:
            found = self.agent.details()
        except Exception as exc:
            raise AgentError(f"agent '{self.label}' failed in details(): {type(exc).__name__}: {exc}") from exc
        return {str(k): str(v) for k, v in dict(found).items()}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Writes the trained agent as data (its :meth:`Agent.state` and its parameters') with its
        prior and setting as a bbrl JSON agent file, atomically.

        Raises:
            TypeError: naming the attribute whose value is not data (see :mod:`bbrl.agents.state`).
        """
        cls = type(self.agent)
        return self.write_file(
            path,
            state=None,
            python={
                "class": class_reference(cls),
                "state": _saved_state(self.agent, "agent"),
                "spec_state": _saved_state(self.spec, "agent parameters"),
            },
        )

    @classmethod
    def from_document(
        cls,
        document: dict[str, Any],
        prior: Any,
        source: str,
        agent_class: type[Agent] | None = None,
        allow_pickle: bool = False,
    ) -> TrainedPythonAgent:
        """The trained Python agent of an agent file's ``document`` (see :func:`bbrl.agents.load`)."""
        python = document["python"]
        if not isinstance(python, dict):
            raise ValueError(f"{source}: field 'python' must be an object")
        if "pickle" in python:
            agent, spec = _unpickled(python, source, allow_pickle)
        else:
            klass = resolve_class(python.get("class"), agent_class, source)
            missing = [key for key in ("state", "spec_state") if key not in python]
            if missing:
                raise ValueError(f"{source}: field 'python' misses {', '.join(map(repr, missing))}")
            agent = _restored(klass, python["state"], f"{source}: python.state")
            spec = _restored(klass, python["spec_state"], f"{source}: python.spec_state")
        return cls(
            spec,
            agent,
            prior,
            float(document["gamma"]),
            int(document["horizon"]),
            int(document["seed"]),
            float(document.get("offline_seconds", 0.0)),
            float("nan") if document.get("offline_cpu_seconds") is None else float(document["offline_cpu_seconds"]),
            recorded_work(document),
        )

    def __repr__(self) -> str:
        return f"TrainedPythonAgent({self.label}, prior={self.prior.name!r}, offline={self.offline_seconds:.3g} s)"


def class_reference(cls: type) -> str:
    """How an agent file names a class: ``module:QualifiedName``."""
    return f"{cls.__module__}:{cls.__qualname__}"


def resolve_class(reference: Any, agent_class: type | None, source: str) -> type[Agent]:
    """The agent class an agent file names (``module:QualifiedName``): ``agent_class`` if given
    (its name must match), else the class of that name in a module *already imported*. A file
    never makes bbrl import a module: its code would run.

    Raises:
        ValueError: naming the file, the class and how to pass it.
    """
    if not isinstance(reference, str) or ":" not in reference:
        raise ValueError(f"{source}: python.class must be 'module:ClassName', got {reference!r}")
    module_name, _, qualname = reference.partition(":")
    if agent_class is not None:
        if agent_class.__qualname__ != qualname:
            raise ValueError(
                f"{source}: the agent was saved from class {reference}, not {class_reference(agent_class)}"
            )
        return agent_class
    import sys

    found: Any = sys.modules.get(module_name)
    for part in qualname.split(".") if found is not None else ():
        found = getattr(found, part, None)
    if not (isinstance(found, type) and issubclass(found, Agent)):
        where = "is not imported" if module_name not in sys.modules else "is not an agent class there"
        raise ValueError(
            f"{source}: the agent's class {reference} {where}; loading an agent file never imports a module "
            f"(its code would run): import it first, or pass it: bbrl.agents.load(path, agent_class={qualname}), "
            f"on the command line --agent-class FILE.py:{qualname}"
        )
    return found


def _saved_state(agent: Agent, what: str) -> Any:
    from .state import encode

    try:
        state = agent.state()
    except Exception as exc:
        raise TypeError(f"{type(agent).__name__}.state() failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(state, dict):
        raise TypeError(f"{type(agent).__name__}.state() must return a dict, got {type(state).__name__}")
    return encode(state, f"{what} ({type(agent).__name__})")


def _restored(cls: type[Agent], document: Any, where: str) -> Agent:
    from .state import decode

    state = decode(document, where)
    if not isinstance(state, dict):
        raise ValueError(f"{where}: must be an object of attributes")
    try:
        agent = cls.from_state(state)
    except Exception as exc:
        raise ValueError(f"{where}: {cls.__name__}.from_state failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(agent, cls):
        raise ValueError(f"{where}: {cls.__name__}.from_state returned a {type(agent).__name__}")
    return agent


class UnsafeLoadWarning(UserWarning):
    """An agent file's pickles were loaded (``allow_pickle=True``): they could run any code."""


def _unpickled(python: dict[str, Any], source: str, allow_pickle: bool) -> tuple[Agent, Agent]:
    """The (agent, spec) of an agent file of the earlier format (pickles), only when asked for."""
    if not allow_pickle:
        raise ValueError(
            f"{source}: this agent file holds pickled Python objects (bbrl's earlier format), which run code "
            "when loaded; if you trust where it comes from, load it with bbrl.agents.load(path, "
            "allow_pickle=True), or convert it once: bbrl agents convert OLD NEW --allow-pickle"
        )
    import base64
    import pickle
    import warnings

    warnings.warn(
        f"{source}: unpickling a Python agent (allow_pickle=True): this runs whatever code the file holds",
        UnsafeLoadWarning,
        stacklevel=4,
    )
    try:
        agent = pickle.loads(base64.b64decode(python["pickle"]))
        spec = pickle.loads(base64.b64decode(python["spec_pickle"]))
    except Exception as exc:
        raise ValueError(
            f"{source}: cannot unpickle the Python agent {python.get('class')!r} "
            f"(is its module importable?): {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(agent, Agent) or not isinstance(spec, Agent):
        raise ValueError(f"{source}: the pickles hold a {type(agent).__name__}, not a bbrl.agents.Agent")
    return agent, spec
