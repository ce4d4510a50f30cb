"""The benchmark protocol (Castronovo et al. 2016): N test MDPs drawn once, every agent trained
offline on a prior and run for one trajectory on each; per-MDP results in one schema.

One job per module: :mod:`~bbrl.protocol.experiment` (:class:`Experiment`, :class:`Run`),
:mod:`~bbrl.protocol.workers` (Python agents on worker processes), :mod:`~bbrl.protocol.schema`
(the columns of every per-MDP result frame and cell file), :mod:`~bbrl.protocol.results` (a grid
folder's cell files read back as frames).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import results, schema
    from .experiment import Experiment, Run
else:
    from ..lazy import attach as _attach

    # Imported on first use (bbrl.lazy), so that importing the package does not import polars.
    __getattr__, __dir__ = _attach(
        __name__,
        submodules=("results", "schema"),
        attributes={
            "Experiment": ".experiment",
            "Run": ".experiment",
        },
    )

__all__ = ["Experiment", "Run", "results", "schema"]
