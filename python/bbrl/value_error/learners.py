"""Value-function learners to evaluate against references: linear TD(lambda) on tile-coded
features (Mountain Car, Puddle World) or one-hot features (tabular, finite MDPs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _core
from ..checks import count
from ..envs import FiniteEnv, registry
from .envs import Environment, Policy, as_environment
from .references import CmapveResult, References, cmapve


@dataclass(frozen=True)
class Features:
    """Sparse binary features (build with :func:`tile_coding` or :func:`one_hot`)."""

    core: Any = field(repr=False)
    params: dict[str, Any]


def tile_coding(lo: tuple[float, float], hi: tuple[float, float], tiles: int = 9, tilings: int = 10) -> Features:
    """Grid tile coding of the box [lo, hi]: ``tilings`` grids of ``tiles x tiles`` cells, offset
    asymmetrically; ``tilings * (tiles + 1)^2`` features, ``tilings`` active. One tiling is state
    aggregation (a tabular learner on a continuous domain)."""
    count(tiles, "tiles", 1)
    count(tilings, "tilings", 1)
    core = _core.SparseFeatures.tiles((float(lo[0]), float(lo[1])), (float(hi[0]), float(hi[1])), tiles, tilings)
    return Features(core, {"features": "tiles", "lo": lo, "hi": hi, "tiles": tiles, "tilings": tilings})


def one_hot(n_states: int) -> Features:
    """One feature per state of a finite MDP (tabular TD)."""
    count(n_states, "n_states", 1)
    return Features(_core.SparseFeatures.one_hot(n_states), {"features": "one-hot", "n_states": n_states})


def box_of(env: Environment) -> tuple[tuple[float, float], tuple[float, float]]:
    """The state box of a continuous environment of the registry (Mountain Car, Puddle World), its
    registry entry's, as (lows, highs) for :func:`tile_coding`."""
    box = registry.entry(env.name)["state_box"] if env.name in registry.names() else []
    if len(box) != 2:
        raise ValueError(f"no state box for {env.name}")
    (low_x, high_x, _), (low_y, high_y, _) = box
    return (low_x, low_y), (high_x, high_y)


@dataclass(frozen=True)
class LearningCurve:
    steps: npt.NDArray[np.uint64]
    """Learning steps at each checkpoint (0 first)."""
    predictions: npt.NDArray[np.float64]
    """(checkpoints, m): the learned values at the evaluation states."""

    def cmapve(self, references: References) -> list[CmapveResult]:
        """CMAPVE with its guaranteed error at every checkpoint."""
        return [cmapve(row, references) for row in self.predictions]


def td_lambda(
    env: Environment | FiniteEnv,
    policy: Policy,
    features: Features,
    states: npt.ArrayLike,
    *,
    alpha: float = 0.1,
    lambda_: float = 0.0,
    n_steps: int = 10_000,
    eval_every: int = 100,
    seed: int = 0,
    run: int = 0,
) -> LearningCurve:
    """Linear TD(lambda) with accumulating traces following ``policy`` from the start law.

    ``alpha`` is divided by the number of active features; ``lambda_ = 0`` is TD(0). Predictions
    at ``states`` are recorded before learning and every ``eval_every`` steps. An episode restarts
    from the start law after a terminal step (target: the reward alone) or at the time limit (target:
    reward plus the discounted next prediction, since the cut is not an end of the task), so the
    learner estimates the discounted values without a horizon: use a discount below 1. The stream
    is (seed, learner, run): runs with different ``run`` are independent.
    """
    env = as_environment(env)
    for name, value, minimum in (("n_steps", n_steps, 1), ("eval_every", eval_every, 1), ("seed", seed, 0)):
        count(value, name, minimum)
    count(run, "run", 0)
    if env.n_states is None:
        array = np.ascontiguousarray(states, dtype=np.float64)
    else:
        array = np.ascontiguousarray(states, dtype=np.int64)
    steps, predictions = _core.value_error_learning_curve(
        env.core, policy.core, features.core, array,
        {"alpha": float(alpha), "lambda": float(lambda_), "n_steps": n_steps, "eval_every": eval_every, "seed": seed,
         "run": run},
    )  # fmt: skip
    return LearningCurve(steps, predictions)
