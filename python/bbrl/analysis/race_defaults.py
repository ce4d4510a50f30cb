"""The race's settings a user chooses, with their defaults (see :mod:`bbrl.analysis.racing`).

Apart from the rule itself, so that the command line lists them in ``--help`` without importing
the rule's polars and NumPy.
"""

from __future__ import annotations

__all__ = ["DEFAULT_DELTA", "DEFAULT_MARGIN", "SEQUENCES"]

#: The race's error level (per comparable pair, or for the experiment with ``family_wise``).
DEFAULT_DELTA = 0.05
#: The plateau margin eta, in paired standard errors at N (the maps' test resolves about 2).
DEFAULT_MARGIN = 1.0
#: The confidence sequences a race can use (the first is the default).
SEQUENCES = ("asymptotic", "betting")
