"""The report's hardness section: the hardness measures (Conserva & Rauber 2022; docs/problems.md) of
every problem a results folder covers, one row per test distribution of its experiments.

What is measured depends on the problem:

* a finite environment used as a distribution (``test = "Taxi"`` in a grid:
  :func:`bbrl.envs.distribution_named`): the environment itself, exactly as ``bbrl envs`` gives it;
* a built-in distribution (GC, GDL, Grid): its **mean MDP**, the transitions ``theta / sum(theta)``
  of every row, with its rewards and start: the MDP the test MDPs are drawn around;
* any other distribution (a file): not measured (a report does not read the files a grid named), said so.

The measures are :meth:`bbrl.envs.FiniteEnv.hardness`'s: on the continuing form, restricted to the
states reachable from the start law, values discounted at 0.99.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ..fileio import write_atomic
from ..protocol.schema import Col
from .report_page import Section

__all__ = ["CSV_FILE", "MEASURES", "hardness_frame", "hardness_html", "hardness_section", "problem_hardness"]

#: The section's table in a report folder.
CSV_FILE = "hardness.csv"

#: The measures shown, in the order of the table: (key of FiniteEnv.hardness, column title).
MEASURES = (
    ("diameter", "Diameter (steps)"),
    ("gap_sum", "Σ 1/gap (non-zero gaps)"),
    ("gap_sum_colosseum", "Σ 1/(gap + 0.1) (Colosseum)"),
    ("value_norm", "Value norm"),
    ("value_norm_colosseum", "Value norm (Colosseum)"),
)


def problem_hardness(test: str) -> tuple[str, dict[str, float]] | None:
    """``(what was measured, the measures)`` of the problem a grid's ``test`` names, or None for a
    name that is neither a finite environment nor a built-in distribution (a file)."""
    from .. import distributions
    from ..envs import FiniteEnv, environment_named, make

    environment = environment_named(test)
    if environment is not None:
        return "the environment", make(environment).hardness()
    if distributions.builtin_name(test) is None:
        return None
    fdm = distributions.get(test)
    theta = np.asarray(fdm.theta)
    mean = theta / theta.sum(axis=2, keepdims=True)
    if fdm.start_law is not None:
        start = np.asarray(fdm.start_law, dtype=np.float64)
    elif fdm.initial_state is not None:
        start = np.eye(fdm.n_states)[fdm.initial_state]
    else:
        start = np.full(fdm.n_states, 1.0 / fdm.n_states)
    # The discount only names the environment's own; the measures use 0.99 whatever it is.
    env = FiniteEnv(mean, fdm.rewards, start, 0.95, name=f"{fdm.name} (mean MDP)")
    return "the distribution's mean MDP", env.hardness()


def hardness_frame(cells: pl.DataFrame) -> pl.DataFrame:
    """One row per test problem of ``cells`` (in their order): ``problem``, ``measured`` (what was
    measured, or why nothing was), ``states`` (the reachable states measured) and the
    :data:`MEASURES` (null where not measured)."""
    rows: list[dict[str, Any]] = []
    for test in dict.fromkeys(cells[Col.TEST].to_list()):
        found = problem_hardness(str(test))
        row: dict[str, Any] = {"problem": str(test)}
        if found is None:
            row.update(measured="not measured (not a built-in problem)", states=None)
            row.update({key: None for key, _ in MEASURES})
        else:
            what, measures = found
            row.update(measured=what, states=int(measures["n_states"]))
            row.update({key: float(measures[key]) for key, _ in MEASURES})
        rows.append(row)
    schema = {"problem": pl.String, "measured": pl.String, "states": pl.Int64} | {k: pl.Float64 for k, _ in MEASURES}
    return pl.DataFrame(rows, schema=schema)


def _value(x: float | None) -> str:
    if x is None:
        return ""
    return "∞" if np.isinf(x) else f"{x:.4g}"


def hardness_html(frame: pl.DataFrame, csv_name: str | None = None) -> str:
    """The body of the report's section on ``frame`` (:func:`hardness_frame`): what the measures are, the table."""
    head = "".join(
        f"<th>{html.escape(t)}</th>" for t in ("Problem", "Measured on", "States", *(t for _, t in MEASURES))
    )
    body = "".join(
        "<tr>"
        + f"<td>{html.escape(r['problem'])}</td><td>{html.escape(r['measured'])}</td>"
        + f"<td>{'' if r['states'] is None else r['states']}</td>"
        + "".join(f"<td>{_value(r[key])}</td>" for key, _ in MEASURES)
        + "</tr>"
        for r in frame.iter_rows(named=True)
    )
    data = f' Data: <a href="{html.escape(csv_name)}">CSV</a>.' if csv_name else ""
    return (
        "<p>The hardness measures of Conserva &amp; Rauber (2022) for each problem of this report: for an "
        "environment used as a distribution, the environment itself; for a built-in distribution, its mean MDP "
        "(the transition means its test MDPs are drawn around). Computed exactly on the continuing form (a terminal "
        "transition restarts from the start law), on the states reachable from the start, values discounted at 0.99 "
        "(Colosseum's setting): the diameter is the largest least expected number of steps from one state to "
        "another (∞ when some state cannot reach another); Σ 1/gap sums the reciprocal sub-optimality gaps "
        "V*(s) - Q*(s, a) over the non-zero ones (the optimal actions' zero gaps skipped), and Colosseum's variant "
        "Σ 1/(gap + 0.1) over every pair; the value norm is the largest standard deviation of V* at the next "
        f"state over the pairs (Colosseum's column uses its reference code's formula). See docs/problems.md.{data}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def hardness_section(cells: pl.DataFrame, folder: Path) -> Section:
    """The report's hardness section for ``cells``; its table is written to ``folder`` (:data:`CSV_FILE`)."""
    frame = hardness_frame(cells)
    write_atomic(folder / CSV_FILE, frame.write_csv().encode())
    return Section("hardness", "Problem hardness", notes_html=hardness_html(frame, CSV_FILE), short="Hardness")
