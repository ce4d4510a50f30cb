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

import base64
import html
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import polars as pl

from ..fileio import read_json_document, write_atomic
from ..protocol.results import Results, load, returns_matrix
from ..protocol.schema import Col
from ..version import __version__
from .cost import REFERENCE, Calibration, CellCosts, cell_costs, fit_calibration, load_calibration
from .figures import (
    ALGORITHM_ORDER,
    algorithm_colour,
    algorithm_linestyle,
    bounds_figure,
    ecdf_figure,
    normalized_figure,
    save_figure,
    score_figure,
)
from .hardness import hardness_section
from .racing import RaceOptions, default_batch, paired_means, with_paired_means
from .regret import plot_cumulative_regret
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
    "FIGURES",
    "MEASURED",
    "OWN",
    "RACE_FILE",
    "REGRET_FIGURE",
    "ExperimentReport",
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

#: Figure kinds, their file suffix and caption (the original's captions).
FIGURES = (
    ("offline", "Offline computation cost vs. performance"),
    ("online", "Online computation cost vs. performance"),
    ("bounds", "Best algorithms w.r.t. offline/online time bounds"),
    ("ecdf", "Distribution over the test MDPs of the return of the best setting of each algorithm"),
)

#: The figure drawn only for experiments whose cells recorded per-step rewards.
REGRET_FIGURE = (
    "regret",
    "Mean cumulative regret against Optimal of the best setting of each algorithm, with 95% bands",
)


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
) -> ExperimentReport:
    """Writes the figures and tables of one experiment (the rows of ``cells``) into ``out``.

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
        ),
    }
    bounds, costs = experiment_map(results, cells, calibration, one_sided, correction)
    best = best_per_algorithm(cells)
    by_algorithm = {
        row[Col.ALGORITHM]: returns_matrix(results, [row[Col.CELL_ID]])[0] for row in best.iter_rows(named=True)
    }
    figures["ecdf"] = save_figure(ecdf_figure(by_algorithm, title, others), out / f"{slug}-ecdf")
    curves = regret_curves(results, cells)
    if curves:
        colours = {c.label: algorithm_colour(algorithm, others) for algorithm, c in curves.items()}
        styles = {c.label: algorithm_linestyle(algorithm, others) for algorithm, c in curves.items()}
        figure = plot_cumulative_regret(list(curves.values()), title=title, colours=colours, linestyles=styles)
        figures["regret"] = save_figure(figure, out / f"{slug}-regret")
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
    if race_note:
        note += "\n" + _race_note(race, cells, stops, short=True)
    figures["bounds"] = save_figure(bounds_figure(bounds, title, others, note, quantity), out / f"{slug}-bounds")
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
    cost under ``calibration`` (None: measured CPU times), and the costs of the competing cells."""
    # The oracle does not compete: it would win every bound it meets.
    competing = cells.filter(~pl.col(Col.KIND).is_in(ORACLE_KINDS))
    if competing.height == 0:
        competing = cells
    ids = competing[Col.CELL_ID].to_list()
    costs = cell_costs(competing, calibration)
    # Measured times tie within the clock's resolution; costs from work counts are exact numbers.
    resolution = max([clock_resolution(r) for r in competing.iter_rows(named=True)] or [0.0])
    bounds = best_under_bounds(
        competing[Col.ALGORITHM].to_list(),
        # A configuration a race stopped: its mean over the N MDPs, estimated paired (racing.py).
        (competing[Col.PAIRED_MEAN] if Col.PAIRED_MEAN in competing.columns else paired_means(results, competing)),
        costs.offline.tolist(),
        costs.online.tolist(),
        returns_matrix(results, ids),
        int(competing[Col.HORIZON][0]),
        one_sided=one_sided,
        resolution=0.0 if "measured" not in costs.basis else resolution,
        correction=correction,
        online_uncertainty=costs.online_uncertainty.tolist(),
        offline_uncertainty=costs.offline_uncertainty.tolist(),
        lattice="1-2-5",
    )
    return bounds, costs


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
    """The calibration fitted on the results' own cells, written to ``calibration.json`` in the
    results folder; None when no cell has work counts (results of an older bbrl)."""
    try:
        own = fit_calibration(cells, name=f"{Path(results_dir).name} (own cells)", source=str(results_dir))
    except ValueError:
        return None
    own.save(Path(results_dir) / CALIBRATION_FILE)
    return own


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


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; }
td:nth-child(n+3) { text-align: right; font-variant-numeric: tabular-nums; }
tr.best td { font-weight: bold; }
table.race-stops td:nth-child(n+3) { text-align: left; }
table.race-stops td:nth-child(3) { text-align: right; }
.race { background: #e8f1fb; padding: 0.5em; border-left: 4px solid #0072b2; }
.race-notes { font-size: 0.85em; color: #444; }
.warn { background: #fff3cd; padding: 0.5em; border-left: 4px solid #e0a800; }
figure { margin: 1em 0; } figure img { max-width: 100%; } figcaption { font-size: 0.9em; color: #555; }
"""


def write_report(
    results_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    one_sided: bool = False,
    correction: str | None = None,
    missing: Mapping[str, int] | None = None,
    machine: str | os.PathLike[str] = REFERENCE,
) -> Path:
    """Writes the report of the grid results in ``results_dir`` into ``out``; returns ``report.html``.

    ``correction="holm"`` corrects the paired tests of each map cell for their multiplicity
    (:func:`bbrl.analysis.stats.holm`). ``missing``: per experiment key (``name/prior``), the cells
    of the grid without a usable result (:func:`bbrl.grid.missing_by_experiment`); the report then
    says that the grid is incomplete.

    ``machine``: the calibration the maps' costs use (:func:`resolve_calibration`): ``"reference"``
    (the shipped reference machine, the default), ``"own"`` (fitted on these results), a calibration
    file, or ``"measured"`` (the measured CPU times, no cost model). Whatever the choice, the
    calibration of these results' own cells is fitted, cached in ``results_dir/calibration.json``
    and its fit per algorithm is reported (``calibration-fit.csv``).
    """
    results = with_paired_means(load(results_dir))
    race = race_settings(results_dir)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
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
                results, sub, folder, one_sided, others, correction, missing.get(key, 0), calibration, race
            )
        )
    summary = normalized_summary(results, cells)
    normalized_part = _normalized_html(summary)
    if summary.aggregate.height:
        figure = save_figure(normalized_figure(summary, others), folder / "normalized-scores")
        data = base64.b64encode(figure["png"].read_bytes()).decode()
        normalized_part = (
            f'<figure id="normalized"><img alt="normalized-scores.png" src="data:image/png;base64,{data}">'
            "<figcaption>Normalised scores over the experiments "
            f'(<a href="{figure["svg"].name}">SVG</a>)</figcaption></figure>{normalized_part}'
        )
        write_atomic(folder / "normalized-scores.csv", summary.aggregate.write_csv().encode())
    if summary.skipped:
        normalized_part += (
            "<p>Not normalised (no Random or no Optimal cell, or Optimal not above Random): "
            f"{html.escape(', '.join(summary.skipped))}.</p>"
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
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>bbrl report</title>',
        f"<style>{_CSS}</style></head><body>",
        "<h1>bbrl report</h1>",
        warning,
        race_part,
        f"<p>Results of <code>{html.escape(str(results_dir))}</code>: {cells.height} agent settings, "
        f"{len(reports)} experiments; bbrl {html.escape(__version__)}. Scores are mean discounted returns with "
        f"95% intervals (1.96 s/√{interval_n}), drawn on every point; lines join each algorithm's Pareto front (its "
        "settings no other of its settings beats on both time and score). Agents with no offline computation "
        "(offline time 0 by declaration) are drawn in the offline figure's left panel, marked none, not at a time; "
        "each time axis states its unit; the oracle is a dashed level, or a note at the axis' edge when it lies far "
        "from the agents' scores. Bold rows: each algorithm's best "
        "setting. The map of best algorithms keeps, under each pair of time budgets, the best algorithm and those "
        f"not significantly different from it (paired Z-test, {test}); grey: no agent within the budgets. A cell "
        "spans the budgets from its lower edge (the bound) to the next bound; bounds lie on the fixed series 1, 2, "
        f"5 x 10^k seconds. {multiplicity}</p>",
        f"<p>{_host_summary(cells)}</p>",
        _calibration_html(calibration, own),
        "<ul>" + "".join(f'<li><a href="#{r.slug}">{html.escape(r.key)}</a></li>' for r in reports) + "</ul>",
        "<h2>Across experiments: normalised scores</h2>",
        "<p>Each algorithm's best setting per experiment, its per-MDP returns normalised as "
        "(return - Random) / (Optimal - Random) with the experiment's mean scores of Random and of the oracle "
        "(0: Random's level, 1: the oracle's). IQM: the mean of the middle 50% of all (experiment, MDP) scores; "
        "intervals: 95% percentile bootstrap resampling the MDPs within each experiment (2000 replicates, seed 0). "
        "P(leader better): the probability that a score of the leader (highest IQM) exceeds one of the algorithm, "
        "ties counting one half, averaged over the experiments. Choosing each algorithm's best setting on the same "
        "MDPs favours algorithms with many settings slightly.</p>",
        normalized_part,
        hardness_section(cells, folder),
    ]
    for r in reports:
        parts.append(f'<section id="{r.slug}"><h2>Experiment {html.escape(r.key)}</h2>')
        if r.missing:
            parts.append(f'<p class="warn">Incomplete: {r.missing} cells of this experiment have no result.</p>')
        if r.regret_note:
            parts.append(f'<p class="warn">{html.escape(r.regret_note)}</p>')
        if r.race_note:
            parts.append(f'<p class="race">{html.escape(r.race_note[0].upper() + r.race_note[1:])}.</p>')
        if "regret" in r.figures:
            parts.append(
                "<p>Cumulative regret: for each test MDP and step t, the sum up to t of the oracle's reward minus "
                "the agent's on the same MDP; its mean over the MDPs with a 95% band (1.96 sd/√N, paired over the "
                "MDPs). Every agent's trajectory on an MDP draws its transitions from that MDP's own environment "
                f'stream, so the pairing is fair. Data: <a href="{html.escape(r.slug)}-regret.csv">CSV</a>.</p>'
            )
        for kind, caption in (*FIGURES, REGRET_FIGURE):
            if kind not in r.figures:  # the regret figure needs recorded rewards
                continue
            png = r.figures[kind]["png"]
            data = base64.b64encode(png.read_bytes()).decode()
            svg = r.figures[kind]["svg"].name
            parts.append(
                f'<figure id="{r.slug}-{kind}"><img alt="{html.escape(png.name)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(caption)} (<code>{html.escape(png.name)}</code>, "
                f'<a href="{html.escape(svg)}">SVG</a>)</figcaption></figure>'
            )
        tables = ", ".join(f'<a href="{html.escape(p.name)}">{k}</a>' for k, p in r.tables.items())
        sub = cells.filter((pl.col(Col.EXPERIMENT) + "/" + pl.col(Col.PRIOR)) == r.key)
        parts.append(f"<h3>Results table</h3><p>Also as {tables}.</p>{table_html(sub)}</section>")
    parts.append("</body></html>")
    return write_atomic(folder / "report.html", "\n".join(parts).encode())
