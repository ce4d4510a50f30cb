"""The benchmark protocol (Castronovo et al. 2016): N test MDPs drawn once, every agent trained
offline on a prior and run for one trajectory on each; per-MDP results in one schema.

One job per module: :mod:`~bbrl.protocol.experiment` (:class:`Experiment`, :class:`Run`),
:mod:`~bbrl.protocol.workers` (Python agents on worker processes), :mod:`~bbrl.protocol.schema`
(the columns of every per-MDP result frame and cell file), :mod:`~bbrl.protocol.results` (a grid
folder's cell files read back as frames).
"""

from __future__ import annotations

from . import results, schema
from .experiment import Experiment, Run

__all__ = ["Experiment", "Run", "results", "schema"]
