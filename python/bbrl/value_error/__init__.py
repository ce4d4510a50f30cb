"""High-confidence value-error estimates (Sajed, Chung and White 2018).

Score a learned value function by its clipped mean absolute percentage value error (CMAPVE)
against reference values computed by rollouts that stop once a confidence bound certifies them
(a betting confidence sequence by default, or the paper's EBGStop)::

    from bbrl import value_error as ve
    ve.clipped_relative_loss(v_hat, v, tau=1.0, c=2.0)
    ve.sample_size(epsilon=0.1, delta=0.1, c=1.0, k=100)      # Algorithm 1's number of states
    ve.rollout_length(epsilon=0.01, tau=1.0, r_max=1.0, gamma=0.99)
    ve.ebgstop(samples, epsilon=0.05, delta=0.1, tau=1.0, value_range=100.0)
    ve.certify_mean(samples, epsilon=0.05, delta=0.1, tau=1.0, low=-100.0, high=0.0)   # betting

    env, policy = ve.paper_setup("mountain-car")            # energy pumping, 60% random, gamma 0.99
    refs = ve.reference_values(env, policy, states=100, epsilon=0.1, delta=0.1, tau=1.0, c=1.0, k=50)
    refs.save("refs.parquet")
    ve.cmapve(v_hat_at_states, refs)                         # estimate and guaranteed error
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# Eager: the function shares its module's name, and importing that module (as references does)
# would bind the module to the package's attribute, which __getattr__ then never sees.
from .ebgstop import EbgStopResult, ebgstop

if TYPE_CHECKING:
    from .budget import Accuracies, accuracies, guaranteed_error, rollout_length, sample_size
    from .envs import (
        Environment,
        Policy,
        as_environment,
        constant_policy,
        energy_pumping,
        finite_mdp,
        mountain_car,
        paper_setup,
        puddle_world,
        tabular_policy,
        uniform_policy,
    )
    from .learners import Features, LearningCurve, box_of, one_hot, td_lambda, tile_coding
    from .losses import (
        absolute_error,
        clipped_relative_loss,
        cmapve_estimate,
        mapve,
        mave,
        msve,
        relative_error,
        squared_error,
    )
    from .references import (
        DEFAULT_MAX_ROLLOUT_STEPS,
        CmapveResult,
        References,
        StateValues,
        cmapve,
        reference_values,
        sample_returns,
        state_values,
    )
    from .stopping import DEFAULT_RULE, RULES, Rule, certify_mean
else:
    from ..lazy import attach as _attach

    # Imported on first use (bbrl.lazy), so that importing the package does not import polars.
    __getattr__, __dir__ = _attach(
        __name__,
        attributes={
            "Accuracies": ".budget",
            "accuracies": ".budget",
            "guaranteed_error": ".budget",
            "rollout_length": ".budget",
            "sample_size": ".budget",
            "Environment": ".envs",
            "Policy": ".envs",
            "as_environment": ".envs",
            "constant_policy": ".envs",
            "energy_pumping": ".envs",
            "finite_mdp": ".envs",
            "mountain_car": ".envs",
            "paper_setup": ".envs",
            "puddle_world": ".envs",
            "tabular_policy": ".envs",
            "uniform_policy": ".envs",
            "Features": ".learners",
            "LearningCurve": ".learners",
            "box_of": ".learners",
            "one_hot": ".learners",
            "td_lambda": ".learners",
            "tile_coding": ".learners",
            "absolute_error": ".losses",
            "clipped_relative_loss": ".losses",
            "cmapve_estimate": ".losses",
            "mapve": ".losses",
            "mave": ".losses",
            "msve": ".losses",
            "relative_error": ".losses",
            "squared_error": ".losses",
            "DEFAULT_MAX_ROLLOUT_STEPS": ".references",
            "CmapveResult": ".references",
            "References": ".references",
            "StateValues": ".references",
            "cmapve": ".references",
            "reference_values": ".references",
            "sample_returns": ".references",
            "state_values": ".references",
            "DEFAULT_RULE": ".stopping",
            "RULES": ".stopping",
            "Rule": ".stopping",
            "certify_mean": ".stopping",
        },
    )

__all__ = [
    "DEFAULT_MAX_ROLLOUT_STEPS",
    "DEFAULT_RULE",
    "RULES",
    "Accuracies",
    "CmapveResult",
    "EbgStopResult",
    "Environment",
    "Features",
    "LearningCurve",
    "Policy",
    "References",
    "Rule",
    "StateValues",
    "absolute_error",
    "accuracies",
    "as_environment",
    "box_of",
    "certify_mean",
    "clipped_relative_loss",
    "cmapve",
    "cmapve_estimate",
    "constant_policy",
    "ebgstop",
    "energy_pumping",
    "finite_mdp",
    "guaranteed_error",
    "mapve",
    "mave",
    "mountain_car",
    "msve",
    "one_hot",
    "paper_setup",
    "puddle_world",
    "reference_values",
    "relative_error",
    "rollout_length",
    "sample_returns",
    "sample_size",
    "squared_error",
    "state_values",
    "tabular_policy",
    "td_lambda",
    "tile_coding",
    "uniform_policy",
]
