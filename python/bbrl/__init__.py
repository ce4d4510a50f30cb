"""bbrl: a fast, faithful Bayesian reinforcement-learning benchmark.

Re-implements the BBRL protocol (Castronovo et al. 2016) on a Rust core::

    import bbrl
    from bbrl import agents, distributions
    gc = distributions.generalized_chain()
    exp = bbrl.Experiment(gc, n_mdps=500, gamma=0.95, horizon=250, seed=0)
    run = exp.run(agents.EGreedy(epsilon=0.0), prior=gc.uniform())
    print(run.mean, run.ci95)

Packages by concept: :mod:`bbrl.agents`, :mod:`bbrl.protocol` (experiments, results, their
schema), :mod:`bbrl.episodic` (regret over episodes), :mod:`bbrl.envs`, :mod:`bbrl.replay`,
:mod:`bbrl.value_error`, :mod:`bbrl.analysis` (statistics, regret, tables, figures, report),
:mod:`bbrl.grid` and :mod:`bbrl.cli`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import (
        agents,
        analysis,
        distributions,
        envs,
        episodic,
        formulas,
        kernels,
        problems,
        protocol,
        replay,
        seeds,
        value_error,
    )
    from .agents import AgentError, Snapshot, Stepper
    from .distributions import FDM
    from .episodic import EpisodicExperiment
    from .protocol import Experiment, Run
    from .version import __version__
else:
    from .lazy import attach as _attach

    # Imported on first use (bbrl.lazy), so that `import bbrl` and `bbrl --help` do not import polars.
    __getattr__, __dir__ = _attach(
        __name__,
        submodules=(
            "agents",
            "analysis",
            "distributions",
            "envs",
            "episodic",
            "formulas",
            "kernels",
            "problems",
            "protocol",
            "replay",
            "seeds",
            "value_error",
        ),
        attributes={
            "AgentError": ".agents",
            "Snapshot": ".agents",
            "Stepper": ".agents",
            "FDM": ".distributions",
            "EpisodicExperiment": ".episodic",
            "Experiment": ".protocol",
            "Run": ".protocol",
            "__version__": ".version",
        },
    )

__all__ = [
    "FDM",
    "AgentError",
    "EpisodicExperiment",
    "Experiment",
    "Run",
    "Snapshot",
    "Stepper",
    "__version__",
    "agents",
    "analysis",
    "distributions",
    "envs",
    "episodic",
    "formulas",
    "kernels",
    "problems",
    "protocol",
    "replay",
    "seeds",
    "value_error",
]
