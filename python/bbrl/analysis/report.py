"""``bbrl report``: the export of SPEC 5.3 for a grid's results, as one self-contained HTML page.

Per experiment (test distribution and prior): four figures (score vs offline time; score vs
online time per decision; the best algorithms under offline/online time bounds; the distribution
of each algorithm's returns) as PNG and SVG, the oracle (``Optimal``) drawn as a dashed reference
level (a note at the axis' edge when it is far from the agents) and left out of the map, and, for an
experiment whose cells recorded per-step rewards, the cumulative regret of each algorithm's best
setting against the oracle (:mod:`bbrl.analysis.regret`), the results table (Markdown, LaTeX, CSV;
each algorithm's best setting in bold), and one self-contained HTML report (figures embedded as
base64 PNG) that opens without a server. The figures are :mod:`bbrl.analysis.figures`, the tables
:mod:`bbrl.analysis.tables`, the per-algorithm summaries :mod:`bbrl.analysis.scores`.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import polars as pl

from .. import agents
from ..fileio import read_json_document, write_atomic
from ..protocol.results import Results, load, returns_matrix
from ..protocol.schema import Col
from ..version import __version__
from .axes import save_figure
from .cost import REFERENCE, Calibration, CellCosts, cached_fit, cell_costs, load_calibration
from .figures import (
    ALGORITHM_ORDER,
    algorithm_colour,
    algorithm_linestyle,
    bounds_figure,
    coinciding,
    ecdf_figure,
    normalized_figure,
    score_figure,
)
from .findings import bounds_finding, ecdf_finding, normalized_finding, regret_finding, score_finding
from .hardness import hardness_section
from .racing import RACE_SENSITIVE, RaceOptions, default_batch, paired_means, race_sensitive_cells, with_paired_means
from .regret import plot_cumulative_regret
from .report_page import Details, ReportFigure, Section, markdown, markdown_code, markdown_escape, page
from .scores import ORACLE_KINDS, NormalizedSummary, normalized_summary, regret_curves
from .stats import best_per_algorithm, best_under_bounds
from .tables import (
    STOPPED_MARK,
    RaceStop,
    clock_resolution,
    race_stops,
    table_csv,
    table_html,
    table_latex,
    table_markdown,
)

__all__ = [
    "CALIBRATION_FILE",
    "EXTRA_SECTIONS",
    "FIGURES",
    "MEASURED",
    "OWN",
    "RACE_FILE",
    "REGRET_FIGURE",
    "ExperimentReport",
    "compare_maps",
    "cost_verdicts",
    "race_settings",
    "resolve_calibration",
    "write_experiment",
    "write_report",
]

#: The calibration fitted on a results folder's own cells, cached in that folder.
CALIBRATION_FILE = "calibration.json"
#: The settings of a raced folder (``bbrl grid run --race``, :mod:`bbrl.grid.race`).
RACE_FILE = "race.json"
#: ``--machine`` value: the folder's own calibration (:data:`CALIBRATION_FILE`).
OWN = "own"
#: ``--machine`` value: no cost model, the measured CPU times (the rule before work was counted).
MEASURED = "measured"

#: Figure kinds (their file suffix) in the order of an experiment's section, and the question each
#: answers (its caption's first part).
FIGURES = (
    ("bounds", "Given an offline and an online time budget, which algorithm should one use?"),
    ("online", "Which settings score best for the online time they spend per decision?"),
    ("offline", "What does offline computation buy: which settings score best for their offline time?"),
    ("ecdf", "How are the returns of each algorithm's best setting spread over the test MDPs?"),
)

#: The figure drawn only for experiments whose cells recorded per-step rewards.
REGRET_FIGURE = ("regret", "How much reward does each algorithm's best setting lose against the oracle, step by step?")

#: The formats of the report's figures: PNG always (embedded in the page), SVG on request.
PNG_ONLY = ("png",)
WITH_SVG = ("png", "svg")


@dataclass
class ExperimentReport:
    """The files written for one experiment."""

    key: str
    slug: str
    figures: dict[str, dict[str, Path]]
    tables: dict[str, Path]
    bounds: pl.DataFrame
    #: Cells of the experiment without a result: the map is incomplete when > 0.
    missing: int = 0
    #: Why no regret figure was drawn although some cells recorded per-step rewards ("" otherwise).
    regret_note: str = ""
    #: The configurations a race stopped early, in the table's order (empty for a full run).
    stops: tuple[RaceStop, ...] = ()
    #: For a raced experiment: that it was raced, with which settings and how many stopped ("" otherwise).
    race_note: str = ""
    #: Cells of the map whose verdict a stopped configuration could have changed (0 for a full run).
    race_sensitive: int = 0
    #: Per figure kind, one sentence (Markdown) saying what it shows.
    findings: dict[str, str] = field(default_factory=dict)
    #: The experiment's title (test, prior, N, T).
    title: str = ""


def race_settings(results_dir: str | os.PathLike[str]) -> dict | None:
    """The race settings a results folder was run with (its :data:`RACE_FILE`), or None for a
    folder run in full."""
    file = Path(results_dir) / RACE_FILE
    if not file.is_file():
        return None
    document = read_json_document(file, "race record")
    RaceOptions.from_record(document, f"race record {str(file)!r}")  # refuses a record of another schema
    return document


def _race_settings_text(race: Mapping, n_mdps: int | None = None) -> str:
    """The race's settings in words (``n_mdps``: the experiment's N, for its default batch)."""
    batch = race.get("batch")
    if batch is None:
        batch_text = (
            f"batches of {default_batch(n_mdps)} test MDPs (the default)"
            if n_mdps
            else "batches of N/10 test MDPs, at least 10 (the default)"
        )
    else:
        batch_text = f"batches of {min(int(batch), n_mdps) if n_mdps else int(batch)} test MDPs"
    level = "family-wise" if race.get("family_wise") else "per comparable pair"
    return (
        f"delta {race.get('delta')} {level}, margin {race.get('margin')} paired standard errors at N, "
        f"{batch_text}, {race.get('sequence')} confidence sequences"
    )


def _race_note(race: Mapping | None, cells: pl.DataFrame, stops: Mapping[str, RaceStop], short: bool = False) -> str:
    """The note of a raced experiment: its settings and how many of its configurations stopped
    (``short``: the settings as ``name value``, for a figure)."""
    if race is None and not stops:
        return ""
    raced = cells.filter(~pl.col(Col.KIND).is_in(ORACLE_KINDS)).height  # the oracle is not raced
    n_mdps = int(cells[Col.N_MDPS][0])
    if race is None:
        settings = ""
    elif short:
        batch = default_batch(n_mdps) if race.get("batch") is None else min(int(race["batch"]), n_mdps)
        family = " family-wise" if race.get("family_wise") else ""
        settings = (
            f" (delta {race.get('delta')}{family}, margin {race.get('margin')}, batch {batch}, {race.get('sequence')})"
        )
    else:
        settings = f" ({_race_settings_text(race, n_mdps)})"
    return f"raced{settings}: {len(stops)} of {raced} configurations stopped early"


def _slug(experiment: str, prior: str) -> str:
    return quote(f"{experiment}-{prior}", safe="-_.").replace("%", "_")


def write_experiment(
    results: Results,
    cells: pl.DataFrame,
    out: Path,
    one_sided: bool = False,
    others: list[str] | None = None,
    correction: str | None = None,
    missing: int = 0,
    calibration: Calibration | None = None,
    race: Mapping | None = None,
    formats: tuple[str, ...] = PNG_ONLY,
) -> ExperimentReport:
    """Writes the figures (``formats``: PNG, and SVG if asked) and tables of one experiment (the
    rows of ``cells``) into ``out``, with one sentence per figure saying what it shows.

    ``missing``: cells of this experiment's configuration without a result (not run, failed or
    damaged); the map then says that it is incomplete. ``calibration``: the map compares each
    cell's work times its seconds per unit (:mod:`bbrl.analysis.cost`) on the fixed 1-2-5 lattice;
    None: the measured CPU times. ``race``: the settings of a raced folder (:func:`race_settings`);
    the map's note then says the experiment was raced and how many configurations stopped (the
    tables and score figures mark the stopped ones whatever ``race`` is).
    """
    first = cells.row(0, named=True)
    key = f"{first[Col.EXPERIMENT]}/{first[Col.PRIOR]}"
    slug = _slug(first[Col.EXPERIMENT], first[Col.PRIOR])
    others = others or []
    basis = "CPU" if set(cells[Col.TIME_BASIS].to_list()) == {"cpu"} else "wall"
    title = (
        f"{first[Col.EXPERIMENT]} (test {first[Col.TEST]}, prior {first[Col.PRIOR]}, "
        f"N = {first[Col.N_MDPS]}, T = {first[Col.HORIZON]})"
    )
    per_step = cells.with_columns(
        (pl.col(Col.ONLINE_CPU_CI95_PER_TRAJECTORY) / pl.col(Col.HORIZON)).alias("_online_halfwidth_per_step")
    )
    findings = {
        "offline": score_finding(cells, Col.OFFLINE_TIME, ""),
        "online": score_finding(cells, Col.ONLINE_TIME_PER_STEP, " per decision"),
    }
    figures = {
        "offline": save_figure(
            score_figure(
                per_step,
                Col.OFFLINE_TIME,
                None,
                f"offline {basis} time",
                title,
                others,
                zero_label="none\n(no offline\ncomputation)",
            ),
            out / f"{slug}-offline",
            formats,
        ),
        "online": save_figure(
            score_figure(
                per_step,
                Col.ONLINE_TIME_PER_STEP,
                "_online_halfwidth_per_step",
                f"online {basis} time",
                title,
                others,
                per=" per decision",
                zero_label="0\n(below the\nclock)",
            ),
            out / f"{slug}-online",
            formats,
        ),
    }
    bounds, costs = experiment_map(results, cells, calibration, one_sided, correction)
    best = best_per_algorithm(cells)
    by_algorithm = {
        row[Col.ALGORITHM]: returns_matrix(results, [row[Col.CELL_ID]])[0] for row in best.iter_rows(named=True)
    }
    figures["ecdf"] = save_figure(ecdf_figure(by_algorithm, title, others), out / f"{slug}-ecdf", formats)
    findings["ecdf"] = ecdf_finding(by_algorithm, coinciding(by_algorithm), agents.Optimal.display)
    curves = regret_curves(results, cells)
    if curves:
        colours = {c.label: algorithm_colour(algorithm, others) for algorithm, c in curves.items()}
        styles = {c.label: algorithm_linestyle(algorithm, others) for algorithm, c in curves.items()}
        figure = plot_cumulative_regret(list(curves.values()), title=title, colours=colours, linestyles=styles)
        figures["regret"] = save_figure(figure, out / f"{slug}-regret", formats)
        findings["regret"] = regret_finding({c.label: (float(c.mean[-1]), float(c.ci95[-1])) for c in curves.values()})
        frame = pl.concat([c.to_polars().with_columns(pl.lit(a).alias(Col.ALGORITHM)) for a, c in curves.items()])
        frame = frame.select(Col.ALGORITHM, pl.exclude(Col.ALGORITHM))
        write_atomic(out / f"{slug}-regret.csv", frame.write_csv().encode())
    regret_note = ""
    if not curves and Col.HAS_REWARDS in cells.columns and cells[Col.HAS_REWARDS].any():
        regret_note = (
            "Some cells recorded per-step rewards, but no regret figure is drawn: it needs an Optimal cell and at "
            "least one other cell of this experiment with recorded rewards."
        )
    stops = race_stops(cells)
    race_note = _race_note(race, cells, stops)
    note = f"incomplete: {missing} cells of this experiment have no result" if missing else ""
    if calibration is not None:
        quantity = "cost"
        note = "; ".join(filter(None, [note, f"cost = work x calibration '{calibration.name}'; hatched: boundary"]))
        if "measured" in costs.basis:
            note += f" ({costs.basis.count('measured')} cells without work counts: measured CPU time)"
    else:
        quantity = "CPU time"
        note = "; ".join(filter(None, [note, "measured CPU times; hatched: boundary"]))
    marked = int(bounds[RACE_SENSITIVE].sum())
    if race_note:
        cells_note = f"{marked} of {bounds.height} map cells a stopped configuration could change"
        note += "\n" + _race_note(race, cells, stops, short=True) + f"; {cells_note} (other diagonal)"
        race_note += f"; {cells_note} (hatched with the other diagonal)"
    figures["bounds"] = save_figure(
        bounds_figure(bounds, title, others, note, quantity), out / f"{slug}-bounds", formats
    )
    findings["bounds"] = bounds_finding(bounds, "")
    lists = ("algorithms", "algorithms_if_slower", "algorithms_if_faster")
    write_atomic(
        out / f"{slug}-bounds.csv",
        bounds.with_columns(pl.col(c).list.join(" ") for c in lists).write_csv().encode(),
    )
    tables = {
        "md": write_atomic(out / f"{slug}-table.md", table_markdown(cells).encode()),
        "tex": write_atomic(out / f"{slug}-table.tex", table_latex(cells, title).encode()),
        "csv": write_atomic(out / f"{slug}-table.csv", table_csv(cells).encode()),
    }
    return ExperimentReport(
        key=key,
        slug=slug,
        figures=figures,
        tables=tables,
        bounds=bounds,
        missing=missing,
        regret_note=regret_note,
        stops=tuple(stops.values()),
        race_note=race_note,
        race_sensitive=marked,
        findings=findings,
        title=title,
    )


def experiment_map(
    results: Results,
    cells: pl.DataFrame,
    calibration: Calibration | None,
    one_sided: bool = False,
    correction: str | None = None,
) -> tuple[pl.DataFrame, CellCosts]:
    """The budget map of one experiment (the rows of ``cells``): the frame of
    :func:`~bbrl.analysis.stats.best_under_bounds` on the fixed 1-2-5 lattice, with each cell's
    cost under ``calibration`` (None: measured CPU times), and the costs of the competing cells.
    Its column :data:`~bbrl.analysis.racing.RACE_SENSITIVE` marks the cells whose verdict a
    configuration stopped by a race could have changed (:func:`~bbrl.analysis.racing.race_sensitive_cells`;
    none in a full run)."""
    # The oracle does not compete: it would win every bound it meets.
    competing = cells.filter(~pl.col(Col.KIND).is_in(ORACLE_KINDS))
    if competing.height == 0:
        competing = cells
    ids = competing[Col.CELL_ID].to_list()
    costs = cell_costs(competing, calibration)
    # Measured times tie within the clock's resolution; costs from work counts are exact numbers.
    resolution = max([clock_resolution(r) for r in competing.iter_rows(named=True)] or [0.0])
    # A configuration a race stopped: its mean over the N MDPs, estimated paired (racing.py).
    means = competing[Col.PAIRED_MEAN] if Col.PAIRED_MEAN in competing.columns else paired_means(results, competing)
    returns = returns_matrix(results, ids)
    resolution = 0.0 if "measured" not in costs.basis else resolution
    bounds = best_under_bounds(
        competing[Col.ALGORITHM].to_list(),
        means,
        costs.offline.tolist(),
        costs.online.tolist(),
        returns,
        int(competing[Col.HORIZON][0]),
        one_sided=one_sided,
        resolution=resolution,
        correction=correction,
        online_uncertainty=costs.online_uncertainty.tolist(),
        offline_uncertainty=costs.offline_uncertainty.tolist(),
        lattice="1-2-5",
    )
    marks = race_sensitive_cells(bounds, competing, means, costs, returns, one_sided, correction, resolution)
    return bounds.with_columns(pl.Series(RACE_SENSITIVE, marks, dtype=pl.Boolean)), costs


def compare_maps(first: Results, second: Results, calibration: Calibration | None) -> pl.DataFrame:
    """The budget maps of two results of one grid (a full run and a raced one, say), cell by cell
    over every experiment, each drawn as the report draws it (:func:`experiment_map`, stopped
    settings ranked by their paired means).

    One row per map cell of either: ``experiment``, ``prior``, its bounds, each map's
    ``algorithms_first`` / ``algorithms_second`` and ``boundary_first`` / ``boundary_second`` (null
    where that map lacks the cell), ``race_sensitive`` (the second map's mark) and ``identical``:
    the same algorithms in the same order and both a boundary or neither, the rule of
    :func:`~bbrl.analysis.stats.map_agreement` (whose counts these rows give)."""
    first, second = with_paired_means(first), with_paired_means(second)
    keys = [Col.EXPERIMENT, Col.PRIOR]
    frames = []
    for key, cells in first.cells.group_by(keys, maintain_order=True):
        other = second.cells.filter((pl.col(Col.EXPERIMENT) == key[0]) & (pl.col(Col.PRIOR) == key[1]))
        maps = [experiment_map(first, cells, calibration)[0]]
        maps.append(experiment_map(second, other, calibration)[0] if other.height else maps[0].clear())
        sides = []
        for side, frame in zip(("first", "second"), maps, strict=True):
            sides.append(
                frame.select(
                    pl.col("online_bound_seconds").round(15),
                    pl.col("offline_bound_seconds").round(15),
                    pl.col("algorithms").alias(f"algorithms_{side}"),
                    pl.col("boundary").alias(f"boundary_{side}"),
                    *([pl.col(RACE_SENSITIVE)] if side == "second" else []),
                )
            )
        both = sides[0].join(sides[1], on=["online_bound_seconds", "offline_bound_seconds"], how="full", coalesce=True)
        frames.append(both.with_columns(pl.lit(key[0]).alias(Col.EXPERIMENT), pl.lit(key[1]).alias(Col.PRIOR)))
    out = pl.concat(frames, how="vertical") if frames else pl.DataFrame()
    if out.height == 0:
        return out
    identical = (
        pl.col("algorithms_first").is_not_null()
        & pl.col("algorithms_second").is_not_null()
        & (pl.col("algorithms_first") == pl.col("algorithms_second"))
        & (pl.col("boundary_first") == pl.col("boundary_second"))
    )
    out = out.with_columns(identical.fill_null(False).alias("identical"), pl.col(RACE_SENSITIVE).fill_null(False))
    return out.select(Col.EXPERIMENT, Col.PRIOR, pl.exclude(Col.EXPERIMENT, Col.PRIOR))


def _host_summary(cells: pl.DataFrame) -> str:
    """Where and how the times were measured, for the report's header."""
    if Col.HOST_CPU not in cells.columns or cells[Col.HOST_CPU].null_count() == cells.height:
        return "The host was not recorded (results of an older bbrl): times are wall times."
    parts = []
    hosts = cells.group_by(Col.HOST_CPU, Col.HOST_VECTOR_EXTENSIONS, Col.HOST_LOGICAL_CORES, maintain_order=True).len()
    for row in hosts.iter_rows(named=True):
        parts.append(
            f"{html.escape(str(row[Col.HOST_CPU]))} ({row[Col.HOST_LOGICAL_CORES]} logical cores; vector extensions: "
            f"{html.escape(str(row[Col.HOST_VECTOR_EXTENSIONS]) or 'none detected')}; {row['len']} cells)"
        )
    loads = cells[Col.HOST_LOAD_AVERAGE].drop_nulls().drop_nans()
    threads = sorted(set(cells[Col.THREADS].drop_nulls().to_list()))
    load = f"{loads.min():.2f} to {loads.max():.2f}" if loads.len() else "unknown"
    return (
        "Measured on " + "; ".join(parts) + f". Worker threads: {', '.join(map(str, threads))}. "
        f"1-minute load average at the end of each cell: {load}. "
        "Times are CPU times (per trajectory on the thread that ran it; offline, every thread of the "
        "process), wall times are kept in the CSV tables. Agents that learn nothing offline have offline "
        "time 0 by declaration."
    )


def _own_calibration(results_dir: str | os.PathLike[str], cells: pl.DataFrame) -> Calibration | None:
    """The calibration fitted on the results' own cells, kept in ``calibration.json`` in the
    results folder (reused from there when fitted on the same cells); None when no cell has work
    counts (results of an older bbrl)."""
    try:
        return cached_fit(
            cells, f"{Path(results_dir).name} (own cells)", str(results_dir), Path(results_dir) / CALIBRATION_FILE
        )
    except ValueError:
        return None


def resolve_calibration(machine: str | os.PathLike[str], own: Calibration | None) -> Calibration | None:
    """The calibration ``machine`` names: ``"reference"``, ``"own"`` (``own``, the results' own
    fit), ``"measured"`` (None: measured CPU times), or a calibration file's path.

    Raises:
        ValueError: ``"own"`` for results without work counts, or a file that is not a calibration.
        FileNotFoundError: no such file.
    """
    if str(machine) == MEASURED:
        return None
    if str(machine) == OWN:
        if own is None:
            raise ValueError("--machine own: these results have no work counts to fit a calibration on")
        return own
    return load_calibration(machine)


def _calibration_html(calibration: Calibration | None, own: Calibration | None) -> str:
    """What the maps' costs are, and how well this machine's counts predict its CPU times."""
    if calibration is None:
        used = (
            "<p><b>Cost model:</b> none. The maps compare the measured CPU times (which vary from run to run "
            "and from machine to machine).</p>"
        )
    else:
        used = (
            "<p><b>Cost model:</b> each cell's work, counted in machine-independent units (value-iteration rows "
            "and entries times sweeps, tree nodes and edges, simulated steps, Gamma variates, formula tokens, "
            "decisions, calls into Python agents), times the seconds per unit of the calibration "
            f"<code>{html.escape(calibration.name)}</code> (machine: {html.escape(calibration.machine)}). The same "
            "results give the same maps bit for bit with this calibration, whatever the run, thread count or CPU. "
            "A hatched cell is a boundary: its answer changes when an agent's cost moves within its "
            "uncertainty (the calibration's RMS relative error for that algorithm). Measured times stay in "
            "the tables and the other figures.</p>"
        )
    if own is None:
        return used + "<p>These results have no work counts (an older bbrl): no calibration of their own.</p>"
    rows = "".join(
        f"<tr><td>{html.escape(str(r[Col.ALGORITHM]))}</td><td>{r['cells']}</td><td>{_number(r['r2'])}</td>"
        f"<td>{100 * r['max_relative_error']:.1f}%</td><td>{100 * r['rms_relative_error']:.1f}%</td></tr>"
        for r in own.fit_table().iter_rows(named=True)
    )
    return (
        used + "<p>How well the work counts predict the CPU times measured here (the calibration fitted on these "
        f"results' own cells, <code>{CALIBRATION_FILE}</code> in the results folder; fit table "
        '<a href="calibration-fit.csv">CSV</a>): R² of predicted against measured seconds, and the relative '
        "error |predicted / measured - 1| over each algorithm's cells (online time per trajectory, and "
        "offline time where an agent learns offline).</p><table><thead><tr><th>Algorithm</th><th>Rows</th>"
        f"<th>R²</th><th>Largest rel. error</th><th>RMS rel. error</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _race_sensitive_html(reports: list[ExperimentReport]) -> str:
    """How many map cells a stopped configuration could have changed, and what the mark means."""
    marked = sum(r.race_sensitive for r in reports)
    cells = sum(r.bounds.height for r in reports)
    return (
        f"Map cells a stopped configuration could have changed: {marked} of {cells}, hatched with the other "
        "diagonal than a boundary's. A cell is marked when a stopped configuration fits its budgets (at its cost "
        "within the cost model's uncertainty), was not beaten by a cheaper setting of its own algorithm, and "
        "could, had it run every test MDP, be not significantly worse than the cell's winner or rank above the "
        "last algorithm the cell names: its mean difference to them over the N test MDPs, bounded from the MDPs "
        "it ran (a confidence sequence, valid where the race stopped, for the MDPs it did not run), is not surely "
        "below the maps' significance threshold, or below 0. Elsewhere the map is the one a full run would "
        "draw, up to the error levels of the race and of those bounds; the rule: docs/racing.md."
    )


def _race_html(race: Mapping | None, reports: list[ExperimentReport]) -> str:
    """The report's part on the race: that the folder was raced, with which settings, and every
    stop per experiment (configuration, test MDPs run, stopper, rule); "" for a folder run in full."""
    stopped = sum(len(r.stops) for r in reports)
    if race is None and not stopped:
        return ""
    settings = (
        f" with {html.escape(_race_settings_text(race))}; costs compared under the "
        f"<code>{html.escape(str(race.get('calibration', 'reference')))}</code> calibration"
        if race is not None
        else " (no race settings recorded: <code>race.json</code> is missing)"
    )
    lead = (
        f'<p class="race"><b>Raced:</b> these results were run as a race (<code>bbrl grid run --race</code>)'
        f"{settings}. Each experiment's configurations ran in batches of the same test MDPs, and a configuration "
        "stopped when a configuration that costs no more was shown better than it (beaten) or, for a setting of "
        "the same algorithm, shown to beat it by no more than the margin (plateau). A stopped configuration ran "
        f"fewer test MDPs: its score and 95% interval are over those MDPs only (a wider interval); it is marked "
        f"{STOPPED_MARK} in the tables, which give the test MDPs each configuration ran, and drawn hollow in the "
        f"score figures. Configurations stopped early: {stopped} in all.</p>"
        f'<p class="race">{_race_sensitive_html(reports)}</p>'
    )
    rows = []
    for r in reports:
        if not r.stops:
            rows.append(
                f'<tr><td><a href="#{r.slug}">{html.escape(r.key)}</a></td><td colspan="4">no configuration '
                "stopped: every one ran every test MDP</td></tr>"
            )
        for stop in r.stops:
            rows.append(
                f'<tr><td><a href="#{r.slug}">{html.escape(r.key)}</a></td><td>{html.escape(stop.label)}</td>'
                f"<td>{stop.n_run} of {stop.n_mdps}</td><td>{html.escape(stop.by_label)}</td>"
                f"<td>{html.escape(stop.rule or stop.text)}</td></tr>"
            )
    head = "<tr><th>Experiment</th><th>Configuration</th><th>Test MDPs run</th><th>Stopped by</th><th>Rule</th></tr>"
    return f'{lead}<table class="race-stops"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _number(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3f}"


def _probability(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.2f}"


def _normalized_html(summary: NormalizedSummary) -> str:
    if not summary.scores:
        return "<p>No experiment has both a Random and an Optimal cell: no normalised scores.</p>"
    head = "<tr><th>Algorithm</th><th>IQM [95%]</th><th>Mean [95%]</th><th>P(leader better)</th></tr>"
    body = "".join(
        f"<tr><td>{html.escape(r[Col.ALGORITHM])}</td><td>{r['iqm']:.3f} [{r['iqm_low']:.3f}, {r['iqm_high']:.3f}]</td>"
        f"<td>{r[Col.MEAN]:.3f} [{r['mean_low']:.3f}, {r['mean_high']:.3f}]</td>"
        f"<td>{_probability(r['p_leader_better'])}</td></tr>"
        for r in summary.aggregate.iter_rows(named=True)
    )
    return f"<table><thead>{head}</thead><tbody>{body}</tbody></table>"


#: A cost model this close to the measured times leaves the maps as they are: the error bounds of
#: the cost model (median relative error at most 10%, largest at most 35%).
GOOD_RMS, GOOD_MAX = 0.10, 0.35


def cost_verdicts(calibration: Calibration | None, algorithms: list[str]) -> list[str]:
    """One verdict per algorithm on its maps' costs (Markdown): exact up to the fit's error, or
    approximate (boundary cells hatched), from the fit of the calibration the maps use."""
    if calibration is None:
        return ["No cost model: the maps compare measured CPU times, which vary from run to run."]
    out = []
    for algorithm in algorithms:
        stats = calibration.fit.get(algorithm)
        name = markdown_escape(algorithm)
        if not stats:
            out.append(f"**{name}**: not in the calibration: costs from its overall fit; maps approximate.")
            continue
        rms, largest = stats.get("rms_relative_error", math.nan), stats.get("max_relative_error", math.nan)
        error = f"RMS relative error {100 * rms:.0f}%, largest {100 * largest:.0f}%"
        if rms <= GOOD_RMS and largest <= GOOD_MAX:
            out.append(f"**{name}**: the cost model fits ({error}): its maps' cells stand.")
        else:
            out.append(
                f"**{name}**: maps are approximate ({error}): cells where its cost lies within that error of a "
                "bound are hatched as boundaries."
            )
    return out


def _lead(results_dir: str | os.PathLike[str], cells: pl.DataFrame, n_experiments: int) -> str:
    return (
        f"Results of {markdown_code(str(results_dir))}: {cells.height} agent settings on {n_experiments} "
        f"experiments (bbrl {markdown_escape(__version__)}). Each figure answers the question in bold under it; "
        "the method, the tables and the data are folded below each section and at the end."
    )


def _method_markdown(test: str, multiplicity: str, interval_n: str) -> str:
    return f"""
- **Scores** are mean discounted returns with 95% intervals (1.96 s/√{interval_n}), drawn on every point;
  lines join each algorithm's Pareto front (its settings no other of its settings beats on both time and score).
- **Times**: agents with no offline computation (offline time 0 by declaration) are drawn in the offline figure's
  left panel, marked *none*, not at a time; each time axis states its unit and has at least three labelled ticks;
  markers that would overlap are spread sideways (the axis says so; the tables give the exact times). The oracle is
  a dashed level, or a note at the axis' edge when it lies far from the agents' scores.
- **Tables**: bold rows are each algorithm's best setting.
- **Maps of the best algorithms**: under each pair of time budgets, the best algorithm and those not significantly
  different from it (paired Z-test, {test}); grey: no agent within the budgets; algorithms sharing a cell are
  stripes, each hatched with its own pattern. A cell spans the budgets from its lower edge (the bound) to the next
  bound; bounds lie on the fixed series 1, 2 and 5 times a power of ten, in seconds. The offline
  budget 0 (agents with no offline computation only) is the strip below the map. {multiplicity}
- **Distributions of returns**: algorithms whose best settings have the same returns on every test MDP are drawn
  as one line, their names listed in its legend entry.
"""


def write_report(
    results_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    one_sided: bool = False,
    correction: str | None = None,
    missing: Mapping[str, int] | None = None,
    machine: str | os.PathLike[str] = REFERENCE,
    svg: bool = False,
) -> Path:
    """Writes the report of the grid results in ``results_dir`` into ``out``; returns ``report.html``.

    The page reads as a paper's results section: the normalised scores across experiments, then per
    experiment its figures, each with the question it answers and one sentence saying what it
    shows (:mod:`bbrl.analysis.findings`), the tables and data folded below; the method, the
    machine and the cost model with a verdict per algorithm (:func:`cost_verdicts`) at the end,
    folded. Sections from :data:`EXTRA_SECTIONS` follow the experiments.

    ``correction="holm"`` corrects the paired tests of each map cell for their multiplicity
    (:func:`bbrl.analysis.stats.holm`). ``missing``: per experiment key (``name/prior``), the cells
    of the grid without a usable result (:func:`bbrl.grid.missing_by_experiment`); the report then
    says that the grid is incomplete. ``svg``: write each figure as SVG too (PNG only otherwise:
    drawing SVG doubles the report's time).

    ``machine``: the calibration the maps' costs use (:func:`resolve_calibration`): ``"reference"``
    (the shipped reference machine, the default), ``"own"`` (fitted on these results), a calibration
    file, or ``"measured"`` (the measured CPU times, no cost model). Whatever the choice, the
    calibration of these results' own cells is fitted (or reused from ``results_dir/calibration.json``
    when fitted there on the same cells: :func:`~bbrl.analysis.cost.cached_fit`), cached there, and
    its fit per algorithm is reported (``calibration-fit.csv``).
    """
    results = with_paired_means(load(results_dir))
    race = race_settings(results_dir)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    formats = WITH_SVG if svg else PNG_ONLY
    cells = results.cells
    own = _own_calibration(results_dir, cells)
    calibration = resolve_calibration(machine, own)
    if own is not None:
        write_atomic(folder / "calibration-fit.csv", own.fit_table().write_csv().encode())
    missing = dict(missing or {})
    algorithms = list(dict.fromkeys(cells[Col.ALGORITHM].to_list()))
    others = [a for a in algorithms if a not in ALGORITHM_ORDER]
    reports = []
    for _key, sub in cells.group_by([Col.EXPERIMENT, Col.PRIOR], maintain_order=True):
        key = f"{sub[Col.EXPERIMENT][0]}/{sub[Col.PRIOR][0]}"
        reports.append(
            write_experiment(
                results, sub, folder, one_sided, others, correction, missing.get(key, 0), calibration, race, formats
            )
        )
    test = "one-sided, z ≥ 1.645" if one_sided else "two-sided, z ≥ 1.96"
    comparisons = sum(int(r.bounds["comparisons"].sum()) for r in reports)
    multiplicity = f"The maps make {comparisons} paired comparisons in all " + (
        "(Holm-corrected within each cell, 5% family-wise)."
        if correction == "holm"
        else "(each at 5%: some 'different' verdicts are expected by chance; `bbrl report --holm` corrects "
        "each cell's comparisons)."
    )
    incomplete = sum(missing.values())
    race_part = _race_html(race, reports)
    interval_n = "n, n the test MDPs a setting ran" if race_part else "N"
    warning = (
        f'<p class="warn"><b>Incomplete grid:</b> {incomplete} cells of the configuration have no result '
        "(not run yet, failed or damaged; see <code>bbrl grid status</code>). Their algorithms may be missing "
        "from the maps.</p>"
        if incomplete
        else ""
    )
    oracles = set(cells.filter(pl.col(Col.KIND).is_in(ORACLE_KINDS))[Col.ALGORITHM].to_list())
    sections = [_normalized_section(results, cells, folder, others, formats), hardness_section(cells, folder)]
    for r in reports:
        sections.append(_experiment_section(r, cells))
    for builder in EXTRA_SECTIONS:
        made = builder(results, folder, formats)
        if made is not None:
            sections.append(made)
    closing = [
        Section(
            "method",
            "Method",
            details=[Details("How the figures are made", markdown(_method_markdown(test, multiplicity, interval_n)))],
        ),
        Section(
            "machine",
            "Machine",
            details=[Details("Where and how the times were measured", f"<p>{_host_summary(cells)}</p>")],
        ),
        _cost_section(calibration, own, [a for a in algorithms if a not in oracles]),
    ]
    if race_part:
        closing.insert(0, Section("race", "Race", notes_html=race_part))
        stopped = sum(len(r.stops) for r in reports)
        warning += (
            f'<p class="race"><b>Raced:</b> {stopped} configurations stopped early; their scores and intervals are '
            "over the test MDPs they ran (drawn hollow); "
            f"{sum(r.race_sensitive for r in reports)} of {sum(r.bounds.height for r in reports)} map cells a "
            "stopped configuration could have changed are hatched with the other diagonal (the settings, every "
            'stop and the rule: <a href="#race">Race</a>).</p>'
        )
    text = page("bbrl report", _lead(results_dir, cells, len(reports)), warning, sections, closing)
    return write_atomic(folder / "report.html", text.encode())


#: Builders of further sections, called in order after the experiments' sections with
#: ``(results, folder, formats)``; each returns a :class:`Section` (or None to add nothing). A
#: module that adds figures to the report appends its builder here.
EXTRA_SECTIONS: list[Callable[[Results, Path, tuple[str, ...]], Section | None]] = []


def _normalized_section(
    results: Results, cells: pl.DataFrame, folder: Path, others: list[str], formats: tuple[str, ...]
) -> Section:
    summary = normalized_summary(results, cells)
    section = Section("normalized", "Across experiments: normalised scores", short="Across experiments")
    method = (
        "Each algorithm's best setting per experiment, its per-MDP returns normalised as "
        "(return - Random) / (Optimal - Random) with the experiment's mean scores of Random and of the oracle "
        "(0: Random's level, 1: the oracle's). IQM: the mean of the middle 50% of all (experiment, MDP) scores; "
        "intervals: 95% percentile bootstrap resampling the MDPs within each experiment (2000 replicates, seed 0). "
        "P(leader better): the probability that a score of the leader (highest IQM) exceeds one of the algorithm, "
        "ties counting one half, averaged over the experiments. Choosing each algorithm's best setting on the same "
        "MDPs favours algorithms with many settings slightly."
    )
    table = _normalized_html(summary)
    if summary.aggregate.height:
        paths = save_figure(normalized_figure(summary, others), folder / "normalized-scores", formats)
        section.figures.append(
            ReportFigure(
                "normalized",
                paths["png"],
                "Which algorithm scores best over all the experiments?",
                normalized_finding(summary),
                paths.get("svg"),
            )
        )
        write_atomic(folder / "normalized-scores.csv", summary.aggregate.write_csv().encode())
        table += '<p>Data: <a href="normalized-scores.csv">CSV</a>.</p>'
    if summary.skipped:
        section.notes_html = (
            "<p>Not normalised (no Random or no Optimal cell, or Optimal not above Random): "
            f"{html.escape(', '.join(summary.skipped))}.</p>"
        )
    section.details.append(Details("Method and table", markdown(method) + table))
    return section


def _experiment_section(r: ExperimentReport, cells: pl.DataFrame) -> Section:
    notes = []
    if r.missing:
        notes.append(f'<p class="warn">Incomplete: {r.missing} cells of this experiment have no result.</p>')
    if r.regret_note:
        notes.append(f'<p class="warn">{html.escape(r.regret_note)}</p>')
    if r.race_note:
        notes.append(f'<p class="race">{html.escape(r.race_note[0].upper() + r.race_note[1:])}.</p>')
    section = Section(r.slug, f"Experiment {r.key}: {r.title}", notes_html="".join(notes), short=r.key)
    for kind, question in (*FIGURES, REGRET_FIGURE):
        if kind not in r.figures:  # the regret figure needs recorded rewards
            continue
        paths = r.figures[kind]
        section.figures.append(
            ReportFigure(f"{r.slug}-{kind}", paths["png"], question, r.findings.get(kind, ""), paths.get("svg"))
        )
    tables = ", ".join(f'<a href="{html.escape(p.name)}">{k}</a>' for k, p in r.tables.items())
    sub = cells.filter((pl.col(Col.EXPERIMENT) + "/" + pl.col(Col.PRIOR)) == r.key)
    body = f'<p>Also as {tables}; the map\'s cells as <a href="{html.escape(r.slug)}-bounds.csv">CSV</a>.</p>'
    if "regret" in r.figures:
        body += markdown(
            "Cumulative regret: for each test MDP and step t, the sum up to t of the oracle's reward minus the "
            "agent's on the same MDP; its mean over the MDPs with a 95% band (1.96 sd/√N, paired over the MDPs). "
            "Every agent's trajectory on an MDP draws its transitions from that MDP's own environment stream, so "
            f"the pairing is fair. Data: [CSV]({r.slug}-regret.csv)."
        )
    section.details.append(Details("Results table and data", body + table_html(sub)))
    return section


def _cost_section(calibration: Calibration | None, own: Calibration | None, competing: list[str]) -> Section:
    verdicts = cost_verdicts(calibration, competing)
    approximate = [a for a in competing if calibration is not None and "approximate" in verdicts[competing.index(a)]]
    summary = (
        "Cost model: fits every algorithm"
        if calibration is not None and not approximate
        else f"Cost model: maps approximate for {', '.join(approximate)} (boundary cells hatched)"
        if approximate
        else "Cost model: none (measured times)"
    )
    body = markdown("\n".join(f"- {v}" for v in verdicts)) + _calibration_html(calibration, own)
    return Section("cost-model", "Cost model of the maps", details=[Details(summary, body)])
