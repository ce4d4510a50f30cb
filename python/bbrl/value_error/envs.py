"""Environments and fixed policies for value-error studies.

Mountain Car and Puddle World are simulated in Rust with continuous states ``(x, v)`` and
``(x, y)``; a finite MDP is built from its tables. Policies are fixed: uniform, Mountain Car's
energy pumping, or a table of action probabilities per state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _core
from ..checks import count
from ..envs import FiniteEnv, registry


@dataclass(frozen=True)
class Environment:
    """A simulator for reference rollouts and learners (build with the functions below)."""

    core: Any = field(repr=False)
    params: dict[str, Any]
    """The builder and its arguments, stored beside references."""

    @property
    def name(self) -> str:
        return self.core.name

    @property
    def n_actions(self) -> int:
        return self.core.spec[0]

    @property
    def n_states(self) -> int | None:
        """The number of states of a finite MDP; ``None`` for a continuous domain."""
        return self.core.spec[1]

    @property
    def discount(self) -> float:
        return self.core.spec[2]

    @property
    def reward_bounds(self) -> tuple[float, float]:
        """``(min, max)`` of a single reward."""
        return self.core.spec[3]

    @property
    def time_limit(self) -> int | None:
        """Steps after which a rollout is cut (the horizon of the values), if any."""
        return self.core.spec[4]

    def uniform_states(self, m: int, seed: int = 0) -> npt.NDArray[Any]:
        """``m`` states drawn uniformly over the state space: an (m, 2) float array for Mountain Car
        (the box [-1.2, 0.5) x [-0.07, 0.07]) and Puddle World ([0, 1]^2 outside the goal corner),
        an (m,) int array for a finite MDP."""
        count(m, "m", 1)
        count(seed, "seed", 0)
        return _core.value_error_uniform_states(self.core, m, seed)


@dataclass(frozen=True)
class Policy:
    """A fixed policy (build with the functions below)."""

    core: Any = field(repr=False)
    params: dict[str, Any]

    @property
    def description(self) -> str:
        return self.core.description


def mountain_car(discount: float | None = None, time_limit: int | None = None) -> Environment:
    """Mountain Car (Sutton and Barto's dynamics; reward -1 per step; ends at x >= 0.5).

    ``discount`` defaults to the registry's 0.99, Sajed et al.'s (their value bound 100 =
    1/(1 - 0.99)). ``time_limit`` (steps) cuts episodes; without one a discount of 1 is the
    episodic task, whose return runs to termination.
    """
    limit = count(time_limit, "time_limit", 1, optional=True)
    core = registry.make_core("MountainCar", discount=None if discount is None else float(discount), time_limit=limit)
    return Environment(core, {"kind": "mountain-car", "discount": core.spec[2], "time_limit": time_limit})


def puddle_world(discount: float | None = None, noise: float = 0.01, time_limit: int | None = None) -> Environment:
    """Puddle World (the Alberta variant: 4 actions of length 0.05 + N(0, noise); reward -1 and
    -400 x depth for each of two puddles, -81 at worst; ends at x, y >= 0.95). ``discount``
    defaults to the registry's 0.99 (1 without ``time_limit``: the episodic task, to termination);
    ``noise`` is the step length's standard deviation."""
    limit = count(time_limit, "time_limit", 1, optional=True)
    core = registry.make_core(
        "PuddleWorld",
        discount=None if discount is None else float(discount),
        noise=float(noise),
        time_limit=limit,
    )
    params = {"kind": "puddle-world", "discount": core.spec[2], "noise": float(noise), "time_limit": time_limit}
    return Environment(core, params)


def finite_mdp(
    transitions: npt.ArrayLike,
    rewards: npt.ArrayLike,
    start: npt.ArrayLike,
    discount: float,
    time_limit: int | None = None,
    name: str = "finite",
) -> Environment:
    """A finite MDP: ``transitions[s, a, s']``, ``rewards[s, a, s']`` (S, A, S), the start law
    ``start[s]``. A discount of 1 needs ``time_limit``: the values are then over that many steps.
    Built as a :class:`bbrl.envs.FiniteEnv` (which checks the tables), then converted."""
    return as_environment(
        FiniteEnv(transitions, rewards, start, discount, count(time_limit, "time_limit", 1, optional=True), name)
    )


def as_environment(env: Environment | FiniteEnv) -> Environment:
    """``env`` itself, or a :class:`bbrl.envs.FiniteEnv` (SixArms, RiverSwim, any finite MDP of
    bbrl) converted to an :class:`Environment` with the same tables, start law, discount and
    time limit."""
    if isinstance(env, Environment):
        return env
    if isinstance(env, FiniteEnv):
        core = _core.ValueErrorEnv.from_finite(env._core)
        params = {"kind": "finite", "name": env.name, "discount": env.discount, "time_limit": env.time_limit}
        return Environment(core, params)
    raise TypeError(f"expected a bbrl.value_error.Environment or a bbrl.envs.FiniteEnv, got {type(env).__name__}")


def uniform_policy(n_actions: int) -> Policy:
    """Every action with probability ``1 / n_actions`` (Puddle World: 4)."""
    count(n_actions, "n_actions", 1)
    return Policy(_core.FixedPolicy.uniform(n_actions), {"kind": "uniform", "n_actions": n_actions})


def constant_policy(action: int, n_actions: int) -> Policy:
    """``action`` in every state, of ``n_actions`` (a deterministic policy; for instance Mountain
    Car's action 1, no push, under which a car on the valley floor never reaches the goal)."""
    count(n_actions, "n_actions", 1)
    count(action, "action", 0)
    core = _core.FixedPolicy.constant(int(action), int(n_actions))
    return Policy(core, {"kind": "constant", "action": int(action), "n_actions": int(n_actions)})


def energy_pumping(random_share: float = 0.6) -> Policy:
    """Mountain Car's energy pumping: push with the velocity (right if v >= 0, else left), except that
    with probability ``random_share`` the action is uniform over the three (0.6 in Sajed et al.)."""
    core = _core.FixedPolicy.energy_pumping(float(random_share))
    return Policy(core, {"kind": "energy-pumping", "random_share": float(random_share)})


def tabular_policy(probabilities: npt.ArrayLike) -> Policy:
    """A policy of a finite MDP: ``probabilities[s, a]``, each row summing to 1."""
    table = np.ascontiguousarray(probabilities, dtype=np.float64)
    if table.ndim != 2:
        raise ValueError(f"probabilities must be an (S, A) array, got shape {table.shape}")
    return Policy(_core.FixedPolicy.tabular(table), {"kind": "tabular", "shape": list(table.shape)})


def default_policy(name: str, random_share: float | None = None) -> Policy:
    """The policy environment ``name``'s registry entry names for its value-error studies (Sajed
    et al.'s: Mountain Car's energy pumping with 60% random actions, Puddle World's uniform
    policy); ``random_share`` replaces energy pumping's share (a policy without one ignores it).

    Raises:
        ValueError: the environment has no default policy.
    """
    entry = registry.entry(name)
    policy = entry["default_policy"]
    if policy is None:
        raise ValueError(f"{entry['name']} has no default policy")
    if policy["kind"] == "energy-pumping":
        return energy_pumping(policy["random_share"] if random_share is None else random_share)
    n_actions = registry.make_core(entry["name"]).spec[0]
    return uniform_policy(n_actions)


def paper_setup(name: str) -> tuple[Environment, Policy]:
    """Sajed et al.'s two studies: ``"MountainCar"`` (energy pumping with 60% random actions) or
    ``"PuddleWorld"`` (uniform policy), both with the registry's discount 0.99 (any spelling the
    registry accepts: ``"mountain-car"`` too): the environment and its registry's default policy."""
    entry = registry.entry(name)
    if entry["default_policy"] is None:
        names = ", ".join(e["name"] for e in registry.REGISTRY if e["default_policy"] is not None)
        raise ValueError(f"{entry['name']} has no study of Sajed et al. ({names})")
    return environment(entry["name"]), default_policy(entry["name"])


def environment(name: str, discount: float | None = None, time_limit: int | None = None) -> Environment:
    """Mountain Car or Puddle World by any spelling of its registry name, built by
    :func:`mountain_car` or :func:`puddle_world` (``discount`` and ``time_limit`` as there)."""
    canonical = registry.canonical(name)
    if canonical == "MountainCar":
        return mountain_car(discount, time_limit)
    if canonical == "PuddleWorld":
        return puddle_world(discount, time_limit=time_limit)
    raise ValueError(f"{canonical} is not a continuous environment of the value-error studies")
