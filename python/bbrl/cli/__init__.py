"""The ``bbrl`` command line: one module per subcommand over shared option definitions.

:mod:`~bbrl.cli.app` builds the parser and runs a command; :mod:`~bbrl.cli.options` defines the
options every subcommand shares (the one convention: ``--out DIR``, ``--seed``, ``--threads``,
``--gamma``, ``--env``, ``--agent``/``--param``); each other module is one subcommand
(``run``, ``quick``, ``grid`` with :mod:`~bbrl.cli.cluster`, ``report``, ``paper``, ``formulas``,
``agents``/``distributions`` in :mod:`~bbrl.cli.listings`, ``value-error``, ``replay``).
"""

from __future__ import annotations

from .app import build_parser, main

__all__ = ["build_parser", "main"]
