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

from .budget import Accuracies, accuracies, guaranteed_error, rollout_length, sample_size
from .ebgstop import EbgStopResult, ebgstop
from .envs import (
    Environment,
    Policy,
    as_environment,
    constant_policy,
    default_policy,
    energy_pumping,
    environment,
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
    "default_policy",
    "ebgstop",
    "energy_pumping",
    "environment",
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
