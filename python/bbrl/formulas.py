"""The formula language of OPPS-DS (SPEC 4.9): index formulas over three Q-variables.

A formula is written in reverse Polish notation (``X2 X0 DIV``) or infix (``QUniform / QMean``)
over X0 = QMean (the posterior-mean model's Q), X1 = QSelf (a model where each state only reaches
itself, plus the observed counts) and X2 = QUniform (a Laplace-smoothed empirical model), with
the unary operators ABS, LN, SQRT, INV (1/x), OPP (-x), the binary SUB, DIV, ADD2, MUL2, MIN2,
MAX2, and numeric constants. An agent acts by the argmax over actions of the formula.

The paper numbers the variables the other way round: its Q0 is QUniform (X2), Q1 is QSelf (X1)
and Q2 is QMean (X0) (docs/formulas.md gives the evidence). Infix ``Q0``, ``Q1``, ``Q2`` are
therefore read only with ``parse(text, paper_names=True)``; otherwise they are an error that
names the unambiguous spelling.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from . import _core
from .fileio import write_atomic

__all__ = ["Formula", "formula_set", "parse", "write_formula_set"]

#: The formula-set sizes that shipped sets are available for.
SHIPPED_SIZES = range(2, 7)


@dataclass(frozen=True)
class Formula:
    """A parsed, valid formula: its RPN, its infix with bbrl's names (``QMean``, ``QSelf``,
    ``QUniform``), its infix with the paper's names (``Q2``, ``Q1``, ``Q0`` respectively) and its
    number of tokens."""

    rpn: str
    infix: str
    paper_infix: str
    n_tokens: int

    def __call__(self, qmean: float, qself: float, quniform: float) -> float:
        """Evaluates the formula; raises ``ArithmeticError`` where the original throws (LN of a
        value <= 0, SQRT of a negative value, INV or DIV by zero)."""
        return _core.formula_eval(self.rpn, qmean, qself, quniform)

    def __str__(self) -> str:
        return self.infix


def parse(text: str, paper_names: bool = False) -> Formula:
    """Parses RPN (``X0 X2 MAX2``) or infix (``max(QMean, QUniform)``); ``ValueError`` names the
    problem. With ``paper_names=True``, infix ``Q0``, ``Q1``, ``Q2`` are the paper's variables
    (QUniform, QSelf, QMean: ``max(Q2, Q0)`` is the formula above); without it they are refused
    as ambiguous."""
    if not isinstance(text, str):
        raise TypeError(f"a formula must be a string, got {type(text).__name__}")
    if not isinstance(paper_names, bool):
        raise TypeError(f"paper_names must be a bool, got {type(paper_names).__name__}")
    rpn, infix, paper_infix, n_tokens = _core.formula_parse(text, paper_names)
    return Formula(rpn, infix, paper_infix, n_tokens)


def formula_set(max_size: int, seed: int | None = None, n_points: int = 1000) -> list[Formula]:
    """F_n: every valid formula of at most ``max_size`` tokens, reduced by equivalence on
    ``n_points`` random points in [-100, 100]^3 (SPEC 4.9.4).

    With ``seed=None`` the shipped set is returned (sizes 2 to 6, generated with seed 0 and 1000
    points: 12, 43, 226, 1204 and 7336 formulas); with a seed, the set is generated (F6 takes
    about a second on two cores).
    """
    if isinstance(max_size, bool) or not isinstance(max_size, int):
        raise TypeError(f"max_size must be an int, got {type(max_size).__name__}")
    if seed is None:
        if max_size not in SHIPPED_SIZES:
            raise ValueError(f"shipped formula sets exist for sizes 2 to 6, got {max_size}; pass a seed to generate")
        rpns = _core.shipped_formula_set(f"F{max_size}")
    else:
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")
        if isinstance(n_points, bool) or not isinstance(n_points, int) or n_points < 1:
            raise ValueError(f"n_points must be an int >= 1, got {n_points!r}")
        rpns = _core.formula_set(max_size, seed, n_points)
    return [parse(r) for r in rpns]


def write_formula_set(path: str | os.PathLike[str], max_size: int, seed: int, n_points: int = 1000) -> Path:
    """Generates F_n with ``seed`` and writes it (one RPN per line, a ``#`` header), atomically."""
    formulas = formula_set(max_size, seed, n_points)
    header = (
        f"# F{max_size}: {len(formulas)} formulas, seed {seed}, {n_points} points in [-100, 100]^3; "
        f"regenerate with: bbrl formulas --max-size {max_size} --seed {seed} --n-points {n_points}\n"
    )
    return write_atomic(path, (header + "".join(f"{f.rpn}\n" for f in formulas)).encode())
