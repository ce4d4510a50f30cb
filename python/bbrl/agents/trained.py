"""The trained-agent type: an agent after offline learning on a prior, and the checks of the
arguments of offline learning (shared by built-in and Python agents)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import _core
from ..checks import discount, integer
from ..checks import seed as checked_seed
from ..distributions import FDM, get
from .file_format import write_agent_file

__all__ = ["TrainedAgent", "training_arguments"]


def training_arguments(prior: Any, gamma: Any, horizon: Any, seed: Any) -> tuple[Any, float, int, int]:
    """Checks the arguments of ``train`` (built-in and Python agents alike): the prior as an FDM
    (a name such as ``"UGC"`` is looked up), gamma in [0, 1), horizon >= 1, seed in [0, 2**64)."""
    prior_fdm = get(prior) if isinstance(prior, str) else prior
    if not isinstance(prior_fdm, FDM):
        raise TypeError(f"prior must be an FDM or a distribution name, got {type(prior).__name__}")
    return prior_fdm, discount(gamma), integer(horizon, "horizon", 1), checked_seed(seed)


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
        offline_work: the work of offline learning in machine-independent units, one count per
            unit of :data:`bbrl.protocol.schema.WORK_UNITS` (zeros for agents that learn nothing
            offline); None when unknown (an agent file written before it was recorded).
    """

    def __init__(
        self,
        spec: Any,
        core: _core.Agent,
        prior: Any,
        gamma: float,
        horizon: int,
        seed: int,
        offline_seconds: float,
        offline_cpu_seconds: float = math.nan,
        offline_work: Sequence[int] | None = None,
    ) -> None:
        self.spec = spec
        self._core = core
        self.prior = prior
        self.gamma = gamma
        self.horizon = horizon
        self.seed = seed
        self.offline_seconds = offline_seconds
        self.offline_cpu_seconds = offline_cpu_seconds
        self.offline_work = None if offline_work is None else [int(n) for n in offline_work]

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
            self._core = self.spec.build_core()
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
        return self.write_file(path, state=self._core.saved_text())

    def write_file(self, path: str | os.PathLike[str], **extra: Any) -> Path:
        """Writes the agent file (:mod:`bbrl.agents.file_format`): the fields every trained agent
        has, plus ``extra`` ones."""
        return write_agent_file(self, path, **extra)

    def __repr__(self) -> str:
        extra = f", formula={self.formula!r}" if self.formula else ""
        return f"TrainedAgent({self.label}, prior={self.prior.name!r}, offline={self.offline_seconds:.3g} s{extra})"
