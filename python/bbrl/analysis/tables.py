"""Result tables: the one Markdown writer, the summary table of runs (terminal, Markdown) and the
results table of a grid's cells (Markdown, LaTeX, CSV, HTML; each algorithm's best setting marked).

A configuration a race stopped early (:mod:`bbrl.grid.race`) has its score over the test MDPs it
ran: the results table then has a column of the MDPs each configuration ran, the stopped ones
marked :data:`STOPPED_MARK`, and a note per stopped configuration saying after how many MDPs, by
which configuration and by which rule it stopped. A table with no stopped configuration is the
table of a full run."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import polars as pl
from rich.console import Console
from rich.table import Table

from ..protocol import Run
from ..protocol.experiment import learned_text
from ..protocol.schema import Col
from .formatting import format_duration, latex_duration
from .racing import read_stop
from .stats import best_per_algorithm

__all__ = [
    "HEADERS",
    "STOPPED_MARK",
    "RaceStop",
    "any_stopped",
    "clock_resolution",
    "learned",
    "markdown_table",
    "print_table",
    "race_stops",
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


#: The mark of a configuration a race stopped early, in every results table.
STOPPED_MARK = "†"

#: How a rule of the race reads in a note (:mod:`bbrl.analysis.racing`).
_RULE_TEXT = {
    "beaten": "beaten by {by}",
    "plateau": "on a plateau with {by}, which it cannot beat by more than the race's margin",
}


@dataclass(frozen=True)
class RaceStop:
    """A configuration of a results table that a race stopped early, as its cell file says.

    Attributes:
        cell_id, label: the stopped configuration.
        n_run: the test MDPs it ran; ``n_mdps``: the experiment's N.
        by, by_label: the configuration that stopped it (its label; its cell id when the table
            does not have it).
        rule: ``"beaten"`` or ``"plateau"`` ("" if the text does not say).
        bounds: the race's bounds at the stop, as text.
        text: the cell file's :data:`~bbrl.protocol.schema.RACE_STOPPED_BY` text, whole.
    """

    cell_id: str
    label: str
    n_run: int
    n_mdps: int
    by: str
    by_label: str
    rule: str
    bounds: str
    text: str

    def note(self) -> str:
        """One sentence: after how many MDPs, by which configuration and rule it stopped."""
        how = _RULE_TEXT.get(self.rule, "stopped by {by}").format(by=self.by_label)
        bounds = f" (its return minus the stopper's: {self.bounds})" if self.bounds else ""
        return (
            f"{self.label}: stopped by the race after {self.n_run} of {self.n_mdps} test MDPs, {how}{bounds}; "
            f"its score and interval are over those {self.n_run} MDPs."
        )


def any_stopped(cells: pl.DataFrame) -> bool:
    """Whether a race stopped any of ``cells`` (rows of ``bbrl.protocol.results.load``'s cells) early."""
    return Col.RACE_STOPPED_BY in cells.columns and cells[Col.RACE_STOPPED_BY].null_count() < cells.height


def race_stops(cells: pl.DataFrame) -> dict[str, RaceStop]:
    """The configurations of ``cells`` a race stopped early, by cell id, in the table's order.

    The stop's text is ``"<cell id> (<rule> after <n> MDPs: <bounds>)"``
    (:data:`~bbrl.protocol.schema.RACE_STOPPED_BY`); a text of another form is kept whole as the
    stopper."""
    if not any_stopped(cells):
        return {}
    labels = dict(zip(cells[Col.CELL_ID].to_list(), cells[Col.LABEL].to_list(), strict=True))
    out = {}
    for row in cells.iter_rows(named=True):
        text = row[Col.RACE_STOPPED_BY]
        if text is None:
            continue
        by, rule, bounds = read_stop(text)
        n_run = int(row[Col.N_RUN]) if row.get(Col.N_RUN) is not None else int(row[Col.N_MDPS])
        out[row[Col.CELL_ID]] = RaceStop(
            cell_id=row[Col.CELL_ID],
            label=row[Col.LABEL],
            n_run=n_run,
            n_mdps=int(row[Col.N_MDPS]),
            by=by,
            by_label=labels.get(by, by),
            rule=rule,
            bounds=bounds,
            text=text,
        )
    return out


def _mdps_run(row: dict, stops: dict[str, RaceStop]) -> str:
    """The MDPs a configuration ran, marked when a race stopped it."""
    n = row.get(Col.N_RUN)
    n = row[Col.N_MDPS] if n is None else n
    return f"{n} {STOPPED_MARK}" if row[Col.CELL_ID] in stops else f"{n}"


#: The header of the column of MDPs run (only in the table of an experiment with stopped configurations).
MDPS_RUN_HEADER = "Test MDPs run"

#: The lead of a table's notes on its stopped configurations.
STOPPED_LEAD = (
    f"{STOPPED_MARK} Stopped early by the race (`bbrl grid run --race`): score and 95% interval over the test MDPs "
    "it ran, fewer than N, so a wider interval than a full run's."
)


def _table_rows(cells: pl.DataFrame) -> tuple[list[dict], set[str]]:
    best = set(best_per_algorithm(cells)[Col.CELL_ID].to_list())
    return list(cells.iter_rows(named=True)), best


def learned(row: dict) -> str:
    """What a cell's agent learned offline, readable (from its JSON ``details``)."""
    return learned_text(json.loads(row[Col.DETAILS]) if row[Col.DETAILS] else {})


def table_markdown(cells: pl.DataFrame) -> str:
    """The results table in Markdown; each algorithm's best setting in bold."""
    rows, best = _table_rows(cells)
    stops = race_stops(cells)
    headers = ["Algorithm", "Agent", "Offline time", "Online time / decision", "Score (mean ± 95%)"]
    align = ["left", "left", "right", "right", "right"]
    if stops:
        headers, align = [*headers, MDPS_RUN_HEADER], [*align, "right"]
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
        if stops:
            cols.append(_mdps_run(row, stops))
        if row[Col.CELL_ID] in best:
            cols = [f"**{c}**" for c in cols]
        lines.append(cols)
    table = markdown_table(headers, lines, align)
    if not stops:
        return table
    notes = "\n".join(f"- {stop.note()}" for stop in stops.values())
    return f"{table}\n{STOPPED_LEAD}\n\n{notes}\n"


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
    stops = race_stops(cells)
    lines = [
        r"\begin{longtable}{llrrr" + ("r" if stops else "") + "}",
        rf"\caption{{{_latex_escape(caption)}}}\\",
        r"\hline",
        r"Algorithm & Agent & Offline time & Online time / decision & Score" + (" & Test MDPs run" if stops else "")
        + r" \\",
        r"\hline",
        r"\endhead",
    ]  # fmt: skip
    for row in rows:
        cols = [
            _latex_escape(row[Col.ALGORITHM]),
            _latex_escape(row[Col.LABEL]),
            latex_duration(row[Col.OFFLINE_TIME], clock_resolution(row)),
            latex_duration(row[Col.ONLINE_TIME_PER_STEP], clock_resolution(row)),
            f"${row[Col.MEAN]:.2f} \\pm {row[Col.CI95]:.2f}$",
        ]
        if stops:
            n = _mdps_run(row, stops).removesuffix(f" {STOPPED_MARK}")
            cols.append(n + (r"\textsuperscript{\dag}" if row[Col.CELL_ID] in stops else ""))
        if row[Col.CELL_ID] in best:
            cols = [rf"\boldmath{{{c}}}" if c.startswith("$") else rf"\textbf{{{c}}}" for c in cols]
        lines.append(" & ".join(cols) + r" \\")
    lines.append(r"\hline")
    if stops:
        lead = _latex_escape(STOPPED_LEAD.removeprefix(STOPPED_MARK).replace("`", ""))
        notes = [lead, *(_latex_escape(stop.note()) for stop in stops.values())]
        lines += [rf"\multicolumn{{6}}{{p{{0.95\linewidth}}}}{{\footnotesize \dag{note}}} \\" for note in notes[:1]]
        lines += [rf"\multicolumn{{6}}{{p{{0.95\linewidth}}}}{{\footnotesize {note}}} \\" for note in notes[1:]]
    lines.append(r"\end{longtable}")
    return "\n".join(lines) + "\n"


def table_csv(cells: pl.DataFrame) -> str:
    """The results table as CSV, times in seconds, with ``best_of_algorithm`` marking the bold rows;
    when a race stopped some configurations early, ``n_run`` (the test MDPs each ran) and
    ``race_stopped_by`` (empty for those that ran every MDP) follow the score."""
    best = set(best_per_algorithm(cells)[Col.CELL_ID].to_list())
    wanted = (
        Col.CELL_ID,
        Col.ALGORITHM,
        Col.LABEL,
        Col.PARAMS,
        Col.DETAILS,
        Col.MEAN,
        Col.CI95,
        *((Col.N_RUN, Col.RACE_STOPPED_BY) if any_stopped(cells) else ()),
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
    """The results table in HTML (best settings in class ``best``), and, when a race stopped some
    configurations early, their column of MDPs run and a note on each stop below the table."""
    rows, best = _table_rows(cells)
    stops = race_stops(cells)
    headers = ["Algorithm", "Agent", "Offline time", "Online time / decision", "Score (mean ± 95%)"]
    head = "".join(f"<th>{h}</th>" for h in (*headers, *([MDPS_RUN_HEADER] if stops else [])))
    body = []
    for row in rows:
        found = learned(row)
        agent = html.escape(row[Col.LABEL]) + (f" <small>[{html.escape(found)}]</small>" if found else "")
        cls = ' class="best"' if row[Col.CELL_ID] in best else ""
        run = ""
        if row[Col.CELL_ID] in stops:
            stop = stops[row[Col.CELL_ID]]
            run = f'<td class="stopped" title="{html.escape(stop.note())}">{html.escape(_mdps_run(row, stops))}</td>'
        elif stops:
            run = f"<td>{html.escape(_mdps_run(row, stops))}</td>"
        body.append(
            f"<tr{cls}><td>{html.escape(row[Col.ALGORITHM])}</td><td>{agent}</td>"
            f"<td>{format_duration(row[Col.OFFLINE_TIME], clock_resolution(row))}</td>"
            f"<td>{format_duration(row[Col.ONLINE_TIME_PER_STEP], clock_resolution(row))}</td>"
            f"<td>{row[Col.MEAN]:.2f} ± {row[Col.CI95]:.2f}</td>{run}</tr>"
        )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    if not stops:
        return table
    lead = html.escape(STOPPED_LEAD).replace("`bbrl grid run --race`", "<code>bbrl grid run --race</code>")
    notes = "".join(f"<li>{html.escape(stop.note())}</li>" for stop in stops.values())
    return f'{table}<div class="race-notes"><p>{lead}</p><ul>{notes}</ul></div>'
