"""gymnasium environments of bbrl (``pip install bbrl-bench[gym]``). Importing this module
registers:

* ``bbrl/GC-v0``, ``bbrl/GDL-v0``, ``bbrl/Grid-v0``: every ``reset(seed=...)`` draws a new MDP
  from the benchmark's distribution (Generalised Chain, Double-Loop, Grid), 250 steps per episode
  (the paper's T); ``reset(options={"mdp_index": i})`` fixes test MDP ``i`` of a
  :class:`bbrl.Experiment` with the environment's ``experiment_seed`` (default 0), the very MDP
  the benchmark runs agents on;
* ``bbrl/<NAME>-v0`` for every finite environment of the registry (``bbrl.envs.NAMES``:
  ``bbrl/SixArms-v0``, ``bbrl/RiverSwim-Osband-v0``, ``bbrl/RiverSwim-Strehl-v0``,
  ``bbrl/Chain-v0``); continuing ones are cut at 1000 steps, RiverSwim-Osband ends after its 20;
* ``bbrl/RiverSwim-v0``: Osband et al.'s variant by default, ``gymnasium.make("bbrl/RiverSwim-v0",
  variant="strehl")`` for the other.

Observations and actions are ``Discrete``; the transition law is the Rust core's.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from . import envs, problems
from .distributions import get

__all__ = ["DistributionEnv", "FiniteGymEnv", "river_swim_env"]

#: Steps after which an episode of a continuing environment is cut.
CONTINUING_EPISODE_STEPS = 1000


class FiniteGymEnv(gymnasium.Env):
    """A :class:`bbrl.envs.FiniteEnv` as a gymnasium environment."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium's class attribute

    def __init__(self, env: envs.FiniteEnv | None = None, name: str = "SixArms", discount: float | None = None) -> None:
        self.env = env if env is not None else envs.make(name, discount)
        self.observation_space = spaces.Discrete(self.env.n_states)
        self.action_space = spaces.Discrete(self.env.n_actions)

    def _seed_stream(self) -> int:
        # The core's stream restarts from a 63-bit seed drawn from gymnasium's seeded Generator, so
        # reset(seed=s) makes the whole episode reproducible.
        return int(self.np_random.integers(2**63))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        state = self.env.reset(seed=self._seed_stream())
        return int(state), {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action[()]  # a 0-d array, as some wrappers pass: its scalar (an int is checked below)
        s2, r, terminal, truncated = self.env.step(action)
        return int(s2), float(r), terminal, truncated, {}


class DistributionEnv(FiniteGymEnv):
    """A benchmark distribution: every reset draws a new MDP (or fixes test MDP ``mdp_index``)."""

    def __init__(self, distribution: str = "GC", experiment_seed: int = 0, discount: float = 0.95) -> None:
        self.distribution = get(distribution)
        self.experiment_seed = int(experiment_seed)
        self.discount = float(discount)
        super().__init__(env=envs.from_distribution(self.distribution, self.experiment_seed, 0, self.discount))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        gymnasium.Env.reset(self, seed=seed)
        options = dict(options or {})
        index = options.pop("mdp_index", None)
        if options:
            raise ValueError(f"unknown reset options {sorted(options)}; the only one is 'mdp_index'")
        if index is None:
            self.env = envs.from_distribution(self.distribution, self._seed_stream(), 0, self.discount)
            info: dict[str, Any] = {}
        else:
            if isinstance(index, (bool, float)) or not isinstance(index, (int, np.integer)) or index < 0:
                raise ValueError(f"mdp_index must be a non-negative int, got {index!r}")
            self.env = envs.from_distribution(self.distribution, self.experiment_seed, int(index), self.discount)
            info = {"mdp_index": int(index)}
        return int(self.env.reset(seed=self._seed_stream())), info


def river_swim_env(variant: str = "osband", discount: float | None = None) -> FiniteGymEnv:
    """``bbrl/RiverSwim-v0``: RiverSwim in either variant (see :func:`bbrl.envs.river_swim`)."""
    return FiniteGymEnv(envs.river_swim(variant, discount))


def _register() -> None:
    for name in problems.names_of("distribution"):
        gymnasium.register(
            id=f"bbrl/{name}-v0",
            entry_point="bbrl.gym:DistributionEnv",
            kwargs={"distribution": name},
            max_episode_steps=250,
        )
    for name in envs.NAMES:
        # An environment with a time limit ends its episodes itself; a continuing one is cut.
        limit = None if envs.make(name).time_limit else CONTINUING_EPISODE_STEPS
        gymnasium.register(
            id=f"bbrl/{name}-v0", entry_point="bbrl.gym:FiniteGymEnv", kwargs={"name": name}, max_episode_steps=limit
        )
    gymnasium.register(id="bbrl/RiverSwim-v0", entry_point="bbrl.gym:river_swim_env")


if "bbrl/GC-v0" not in gymnasium.registry:
    _register()
