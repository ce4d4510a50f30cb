"""Result tables: the one Markdown writer, the summary table of runs (terminal, Markdown) and the
results table of a grid's cells (Markdown, LaTeX, CSV, HTML; each algorithm's best setting marked)."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Sequence

import polars as pl
from rich.console import Console
from rich.table import Table

from ..protocol import Run
from ..protocol.experiment import learned_text
from ..protocol.schema import Col
from .formatting import format_duration, latex_duration
from .stats import best_per_algorithm

__all__ = [
    "HEADERS",
    "clock_resolution",
    "learned",
    "markdown_table",
    "print_table",
    "summary_frame",
    "summary_markdown",
    "table_csv",
    "table_html",
    "table_latex",
    "table_markdown",
]


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[str]], align: Sequence[str] | None = None) -> str:
    """A Markdown table: ``headers``, then one line per row; ``align`` gives each column's
    alignment (``"left"`` or ``"right"``; default left). A ``|`` inside a cell is escaped."""
    align = align or ["left"] * len(headers)
    rule = "|" + "".join("---:|" if a == "right" else "---|" for a in align)
    lines = ["| " + " | ".join(headers) + " |", rule]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def summary_frame(runs: Iterable[Run]) -> pl.DataFrame:
    """One row per run: experiment, prior, agent, mean, 95% half-width and times (seconds)."""
    return pl.DataFrame([run.summary() for run in runs])


def _summary_rows(frame: pl.DataFrame) -> list[list[str]]:
    return [
        [
            row[Col.EXPERIMENT],
            row[Col.PRIOR],
            row[Col.AGENT] + (f" [{row[Col.LEARNED]}]" if row.get(Col.LEARNED) else ""),
            f"{row[Col.MEAN]:.2f} ± {row[Col.CI95]:.2f}",
            format_duration(row[Col.OFFLINE_SECONDS]),
            format_duration(row[Col.ONLINE_SECONDS_PER_STEP]),
        ]
        for row in frame.iter_rows(named=True)
    ]


HEADERS = ["Experiment", "Prior", "Agent", "Score (mean ± 95%)", "Offline time", "Online time / decision"]


def print_table(frame: pl.DataFrame, console: Console | None = None, title: str | None = None) -> None:
    """Prints the summary frame as a table on the terminal."""
    table = Table(title=title)
    for header in HEADERS:
        table.add_column(header, justify="right" if header.startswith(("Score", "Off", "On")) else "left")
    for row in _summary_rows(frame):
        table.add_row(*row)
    (console or Console()).print(table)


def summary_markdown(frame: pl.DataFrame) -> str:
    """The summary frame as a Markdown table."""
    return markdown_table(HEADERS, _summary_rows(frame))


def clock_resolution(row: dict) -> float:
    value = row.get(Col.CPU_CLOCK_RESOLUTION_SECONDS)
    return float(value) if value is not None and math.isfinite(value) else 0.0


def _table_rows(cells: pl.DataFrame) -> tuple[list[dict], set[str]]:
    best = set(best_per_algorithm(cells)[Col.CELL_ID].to_list())
    return list(cells.iter_rows(named=True)), best


def learned(row: dict) -> str:
    """What a cell's agent learned offline, readable (from its JSON ``details``)."""
    return learned_text(json.loads(row[Col.DETAILS]) if row[Col.DETAILS] else {})


def table_markdown(cells: pl.DataFrame) -> str:
    """The results table in Markdown; each algorithm's best setting in bold."""
    rows, best = _table_rows(cells)
    headers = ["Algorithm", "Agent", "Offline time", "Online time / decision", "Score (mean ± 95%)"]
    lines = []
    for row in rows:
        found = learned(row)
        cols = [
            row[Col.ALGORITHM],
            row[Col.LABEL] + (f" [{found}]" if found else ""),
            format_duration(row[Col.OFFLINE_TIME], clock_resolution(row)),
            format_duration(row[Col.ONLINE_TIME_PER_STEP], clock_resolution(row)),
            f"{row[Col.MEAN]:.2f} ± {row[Col.CI95]:.2f}",
        ]
        if row[Col.CELL_ID] in best:
            cols = [f"**{c}**" for c in cols]
        lines.append(cols)
    return markdown_table(headers, lines, ["left", "left", "right", "right", "right"])


def _latex_escape(text: str) -> str:
    out = []
    for ch in text:
        if ch in "&%$#_{}":
            out.append("\\" + ch)
        elif ch == "\\":
            out.append(r"\textbackslash{}")
        elif ch == "~":
            out.append(r"\textasciitilde{}")
        elif ch == "^":
            out.append(r"\textasciicircum{}")
        else:
            out.append(ch)
    return "".join(out)


def table_latex(cells: pl.DataFrame, caption: str) -> str:
    """The results table as a LaTeX ``longtable`` (as the original's ``table-<i>.tex``); best in bold."""
    rows, best = _table_rows(cells)
    lines = [
        r"\begin{longtable}{llrrr}",
        rf"\caption{{{_latex_escape(caption)}}}\\",
        r"\hline",
        r"Algorithm & Agent & Offline time & Online time / decision & Score \\",
        r"\hline",
        r"\endhead",
    ]
    for row in rows:
        cols = [
            _latex_escape(row[Col.ALGORITHM]),
            _latex_escape(row[Col.LABEL]),
            latex_duration(row[Col.OFFLINE_TIME], clock_resolution(row)),
            latex_duration(row[Col.ONLINE_TIME_PER_STEP], clock_resolution(row)),
            f"${row[Col.MEAN]:.2f} \\pm {row[Col.CI95]:.2f}$",
        ]
        if row[Col.CELL_ID] in best:
            cols = [rf"\boldmath{{{c}}}" if c.startswith("$") else rf"\textbf{{{c}}}" for c in cols]
        lines.append(" & ".join(cols) + r" \\")
    lines += [r"\hline", r"\end{longtable}"]
    return "\n".join(lines) + "\n"


def table_csv(cells: pl.DataFrame) -> str:
    """The results table as CSV, times in seconds, with ``best_of_algorithm`` marking the bold rows."""
    best = set(best_per_algorithm(cells)[Col.CELL_ID].to_list())
    wanted = (
        Col.CELL_ID,
        Col.ALGORITHM,
        Col.LABEL,
        Col.PARAMS,
        Col.DETAILS,
        Col.MEAN,
        Col.CI95,
        Col.OFFLINE_SECONDS,
        Col.OFFLINE_CPU_SECONDS,
        Col.ONLINE_SECONDS_PER_TRAJECTORY,
        Col.ONLINE_CPU_SECONDS_PER_TRAJECTORY,
        Col.ONLINE_CPU_CI95_PER_TRAJECTORY,
        Col.ONLINE_SECONDS_PER_STEP,
        Col.ONLINE_CPU_SECONDS_PER_STEP,
        Col.TIME_BASIS,
        Col.N_MDPS,
        Col.GAMMA,
        Col.HORIZON,
        Col.SEED,
        Col.THREADS,
        Col.HOST_CPU,
        Col.HOST_VECTOR_EXTENSIONS,
        Col.HOST_LOGICAL_CORES,
        Col.HOST_LOAD_AVERAGE,
        Col.BBRL_VERSION,
    )
    frame = cells.select([c for c in wanted if c in cells.columns]).with_columns(
        pl.col(Col.CELL_ID).is_in(list(best)).alias("best_of_algorithm")
    )
    return frame.write_csv()


def table_html(cells: pl.DataFrame) -> str:
    rows, best = _table_rows(cells)
    head = "".join(
        f"<th>{h}</th>" for h in ("Algorithm", "Agent", "Offline time", "Online time / decision", "Score (mean ± 95%)")
    )
    body = []
    for row in rows:
        found = learned(row)
        agent = html.escape(row[Col.LABEL]) + (f" <small>[{html.escape(found)}]</small>" if found else "")
        cls = ' class="best"' if row[Col.CELL_ID] in best else ""
        body.append(
            f"<tr{cls}><td>{html.escape(row[Col.ALGORITHM])}</td><td>{agent}</td>"
            f"<td>{format_duration(row[Col.OFFLINE_TIME], clock_resolution(row))}</td>"
            f"<td>{format_duration(row[Col.ONLINE_TIME_PER_STEP], clock_resolution(row))}</td>"
            f"<td>{row[Col.MEAN]:.2f} ± {row[Col.CI95]:.2f}</td></tr>"
        )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
