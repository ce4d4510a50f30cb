"""bbrl: a fast, faithful Bayesian reinforcement-learning benchmark.

Re-implements the BBRL protocol (Castronovo et al. 2016) on a Rust core::

    import bbrl
    from bbrl import agents, distributions
    gc = distributions.generalized_chain()
    exp = bbrl.Experiment(gc, n_mdps=500, gamma=0.95, horizon=250, seed=0)
    run = exp.run(agents.EGreedy(epsilon=0.0), prior=gc.uniform())
    print(run.mean, run.ci95)
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from . import (
    agents,
    distributions,
    envs,
    formulas,
    kernels,
    regret,
    replay,
    results,
    schema,
    seeds,
    stats,
    value_error,
)
from ._core import AgentError
from .distributions import FDM
from .experiment import Experiment, Run
from .stepper import Snapshot, Stepper

try:
    __version__ = version("bbrl-bench")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
    from ._core import __version__

__all__ = [
    "FDM",
    "AgentError",
    "Experiment",
    "Run",
    "Snapshot",
    "Stepper",
    "__version__",
    "agents",
    "distributions",
    "envs",
    "formulas",
    "kernels",
    "regret",
    "replay",
    "results",
    "schema",
    "seeds",
    "stats",
    "value_error",
]
