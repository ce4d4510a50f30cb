"""``bbrl report``: the export of SPEC 5.3 for a grid's results.

Per experiment (test distribution and prior): the three figures (score vs offline time; score vs
online time per decision; the best algorithms under offline/online time bounds) as PNG and SVG,
the oracle (``Optimal``) drawn as a dashed reference level and left out of the map, and, for an
experiment whose cells recorded per-step rewards, the cumulative regret of each algorithm's best
setting against the oracle (:mod:`bbrl.regret`),
the results table (Markdown, LaTeX, CSV; each algorithm's best setting in bold), and one
self-contained HTML report (figures embedded as base64 PNG) that opens without a server.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import numpy as np
import polars as pl

from . import __version__, agents
from ._fileio import write_atomic
from .regret import RegretCurve, plot_cumulative_regret, regret_curve
from .results import Results, load, returns_matrix, rewards_matrix
from .stats import (
    best_per_algorithm,
    best_under_bounds,
    mean_ci95,
    normalized_scores,
    probability_of_improvement,
    stratified_bootstrap_ci,
)

__all__ = ["FIGURES", "REGRET_FIGURE", "ExperimentReport", "regret_curves", "write_report"]

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

#: Stable colours: an algorithm has the same colour in every figure and report, by its place in the
#: registry of agent kinds (:func:`bbrl.agents.kinds`).
_ORDER = tuple(cls.display for cls in agents.kinds().values())
_MARKERS = "os^vD<>phX*P"
#: Agents that see the true MDP: drawn as reference levels, left out of the best-algorithm map.
ORACLE_KINDS = ("optimal",)
#: Times below this are drawn at it on the log axes (a log axis cannot show 0).
TIME_FLOOR_SECONDS = 1e-7


def _colour(algorithm: str, others: list[str]) -> tuple[float, ...]:
    import matplotlib

    cmap = matplotlib.colormaps["tab20"]
    index = _ORDER.index(algorithm) if algorithm in _ORDER else len(_ORDER) + others.index(algorithm)
    return cmap((2 * index) % 20 + (index // 10) % 2)


def _marker(algorithm: str, others: list[str]) -> str:
    index = _ORDER.index(algorithm) if algorithm in _ORDER else len(_ORDER) + others.index(algorithm)
    return _MARKERS[index % len(_MARKERS)]


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


def _slug(experiment: str, prior: str) -> str:
    return quote(f"{experiment}-{prior}", safe="-_.").replace("%", "_")


_UNITS = (("d", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


def _duration_parts(seconds: float) -> tuple[str, str]:
    """(number, unit) of a duration in its largest fitting unit among d, h, min, s, ms, µs, ns."""
    for unit, size in _UNITS[:-1]:
        if seconds >= size:
            return f"{seconds / size:.3g}", unit
    return f"{seconds / 1e-9:.3g}", "ns"


def format_duration(seconds: float, resolution: float = 0.0) -> str:
    """A duration in its largest fitting unit among d, h, min, s, ms, µs, ns; "-" if unknown,
    "0" for a time zero by declaration, "< r" below the clock's resolution ``r`` (not a number)."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    if seconds == 0.0:
        return "0"
    if resolution and seconds < resolution:
        return "< " + format_duration(resolution)
    number, unit = _duration_parts(seconds)
    return f"{number} {unit}"


def latex_duration(seconds: float, resolution: float = 0.0) -> str:
    """A duration for LaTeX: a thin space between number and unit, µ as ``\\textmu``."""
    if seconds is None or not math.isfinite(seconds):
        return "--"
    if seconds == 0.0:
        return "0"
    if resolution and seconds < resolution:
        return "$<$ " + latex_duration(resolution)
    number, unit = _duration_parts(seconds)
    unit = unit.replace("µ", r"\textmu{}")
    return number + r"\," + unit


def _resolution(row: dict) -> float:
    value = row.get("cpu_clock_resolution_seconds")
    return float(value) if value is not None and math.isfinite(value) else 0.0


def _table_rows(cells: pl.DataFrame) -> tuple[list[dict], set[str]]:
    best = set(best_per_algorithm(cells)["cell_id"].to_list())
    return list(cells.iter_rows(named=True)), best


def _learned(row: dict) -> str:
    details = json.loads(row["details"]) if row["details"] else {}
    if "formula_infix" in details:
        return f"formula {details['formula_infix']}"
    return ", ".join(f"{k}={v}" for k, v in details.items())


def table_markdown(cells: pl.DataFrame) -> str:
    """The results table in Markdown; each algorithm's best setting in bold."""
    rows, best = _table_rows(cells)
    lines = [
        "| Algorithm | Agent | Offline time | Online time / decision | Score (mean ± 95%) |",
        "|---|---|---:|---:|---:|",
    ]
    for row in rows:
        agent = row["label"] + (f" [{_learned(row)}]" if _learned(row) else "")
        cols = [
            row["algorithm"],
            agent.replace("|", "\\|"),
            format_duration(row["offline_time"], _resolution(row)),
            format_duration(row["online_time_per_step"], _resolution(row)),
            f"{row['mean']:.2f} ± {row['ci95']:.2f}",
        ]
        if row["cell_id"] in best:
            cols = [f"**{c}**" for c in cols]
        lines.append("| " + " | ".join(cols) + " |")
    return "\n".join(lines) + "\n"


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
            _latex_escape(row["algorithm"]),
            _latex_escape(row["label"]),
            latex_duration(row["offline_time"], _resolution(row)),
            latex_duration(row["online_time_per_step"], _resolution(row)),
            f"${row['mean']:.2f} \\pm {row['ci95']:.2f}$",
        ]
        if row["cell_id"] in best:
            cols = [rf"\boldmath{{{c}}}" if c.startswith("$") else rf"\textbf{{{c}}}" for c in cols]
        lines.append(" & ".join(cols) + r" \\")
    lines += [r"\hline", r"\end{longtable}"]
    return "\n".join(lines) + "\n"


def table_csv(cells: pl.DataFrame) -> str:
    """The results table as CSV, times in seconds, with ``best_of_algorithm`` marking the bold rows."""
    best = set(best_per_algorithm(cells)["cell_id"].to_list())
    wanted = (
        "cell_id",
        "algorithm",
        "label",
        "params",
        "details",
        "mean",
        "ci95",
        "offline_seconds",
        "offline_cpu_seconds",
        "online_seconds_per_trajectory",
        "online_cpu_seconds_per_trajectory",
        "online_cpu_ci95_per_trajectory",
        "online_seconds_per_step",
        "online_cpu_seconds_per_step",
        "time_basis",
        "n_mdps",
        "gamma",
        "horizon",
        "seed",
        "threads",
        "host_cpu",
        "host_vector_extensions",
        "host_logical_cores",
        "host_load_average",
        "bbrl_version",
    )
    frame = cells.select([c for c in wanted if c in cells.columns]).with_columns(
        pl.col("cell_id").is_in(list(best)).alias("best_of_algorithm")
    )
    return frame.write_csv()


def _table_html(cells: pl.DataFrame) -> str:
    rows, best = _table_rows(cells)
    head = "".join(
        f"<th>{h}</th>" for h in ("Algorithm", "Agent", "Offline time", "Online time / decision", "Score (mean ± 95%)")
    )
    body = []
    for row in rows:
        learned = _learned(row)
        agent = html.escape(row["label"]) + (f" <small>[{html.escape(learned)}]</small>" if learned else "")
        cls = ' class="best"' if row["cell_id"] in best else ""
        body.append(
            f"<tr{cls}><td>{html.escape(row['algorithm'])}</td><td>{agent}</td>"
            f"<td>{format_duration(row['offline_time'], _resolution(row))}</td>"
            f"<td>{format_duration(row['online_time_per_step'], _resolution(row))}</td>"
            f"<td>{row['mean']:.2f} ± {row['ci95']:.2f}</td></tr>"
        )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _save(fig: object, base: Path) -> dict[str, Path]:
    import matplotlib.pyplot as plt

    paths = {}
    for fmt in ("png", "svg"):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=fmt, dpi=120, bbox_inches="tight")  # type: ignore[attr-defined]
        paths[fmt] = write_atomic(base.with_suffix(f".{fmt}"), buffer.getvalue())
    plt.close(fig)  # type: ignore[arg-type]
    return paths


def pareto_front(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both axes (less time, higher score), by
    increasing x: each algorithm's best trade-offs, the only points a line between means anything."""
    order = np.lexsort((-y, x))
    front: list[int] = []
    best = -math.inf
    for i in order:
        if y[i] > best:
            front.append(int(i))
            best = y[i]
    return np.asarray(front, dtype=np.int64)


def _score_figure(
    cells: pl.DataFrame,
    x_column: str,
    x_halfwidth: str | None,
    scale: float,
    xlabel: str,
    title: str,
    others: list[str],
):
    """Mean score against a time, one marker per setting with its 95% interval (vertical: the
    score; horizontal: the mean time, where measured per trajectory), and each algorithm's Pareto
    front as its line. Times of zero are drawn at :data:`TIME_FLOOR_SECONDS` (a log axis)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    for row in cells.filter(pl.col("kind").is_in(ORACLE_KINDS)).iter_rows(named=True):
        # The oracle sees the true MDP: a reference level, not a point of the trade-off.
        ax.axhline(row["mean"], color="0.35", linestyle="--", linewidth=1.0, label=f"{row['algorithm']}, reference")
    competitors = cells.filter(~pl.col("kind").is_in(ORACLE_KINDS))
    for algorithm in dict.fromkeys(competitors["algorithm"].to_list()):
        sub = competitors.filter(pl.col("algorithm") == algorithm)
        x = np.maximum(sub[x_column].to_numpy().astype(np.float64) * scale, TIME_FLOOR_SECONDS * scale)
        y = sub["mean"].to_numpy()
        yerr = sub["ci95"].to_numpy()
        xerr = None
        if x_halfwidth is not None and x_halfwidth in sub.columns:
            h = np.nan_to_num(sub[x_halfwidth].to_numpy().astype(np.float64)) * scale
            xerr = np.vstack([np.minimum(h, x - x * 0.5), h])  # never below the axis floor
        colour, marker = _colour(algorithm, others), _marker(algorithm, others)
        ax.errorbar(
            x, y, yerr=yerr, xerr=xerr, fmt=marker, markersize=5, color=colour, elinewidth=0.8, capsize=2,
            label=algorithm,
        )  # fmt: skip
        front = pareto_front(x, y)
        if front.size > 1:
            ax.plot(x[front], y[front], linestyle="-", linewidth=0.9, color=colour)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("mean discounted return (95% interval)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    # Outside the axes, so that the legend never hides a point.
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="algorithm", title_fontsize=8)
    return fig


def _edges(bounds: list[float], factor: float) -> list[tuple[float, float]]:
    """The range of budgets each bound stands for: from the bound up to the next one (the last up
    to one factor more). A budget in that range admits at least the agents within the bound."""
    return [(b, bounds[k + 1] if k + 1 < len(bounds) else b * factor) for k, b in enumerate(bounds)]


def _bounds_figure(bounds: pl.DataFrame, title: str, others: list[str], note: str = ""):
    """The best algorithms for each pair of budgets, each cell drawn over the range of budgets it
    stands for (edges at the bounds). A bound of 0 offline (agents that learn nothing offline only)
    is drawn as the band below the first positive bound."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    from .stats import BOUND_FACTOR

    fig, ax = plt.subplots(figsize=(8.5, 5.2))
    xs = sorted(set(bounds["online_bound_seconds_per_step"].to_list()))
    ys = sorted(set(bounds["offline_bound_seconds"].to_list()))
    positive = [y for y in ys if y > 0.0]
    zero_band = (positive[0] / BOUND_FACTOR if positive else 1e-3, positive[0] if positive else 1e-2)
    x_range = dict(zip(xs, _edges(xs, BOUND_FACTOR), strict=True))
    y_range = dict(zip(positive, _edges(positive, BOUND_FACTOR), strict=True))
    y_range[0.0] = zero_band
    seen: dict[str, tuple[float, ...]] = {}
    for row in bounds.iter_rows(named=True):
        x0, x1 = (v * 1e3 for v in x_range[row["online_bound_seconds_per_step"]])
        y0, y1 = y_range[row["offline_bound_seconds"]]
        chosen = row["algorithms"]
        # Several algorithms not significantly different share the cell in horizontal stripes.
        edges = np.exp(np.linspace(math.log(y0), math.log(y1), len(chosen) + 1))
        for k, algorithm in enumerate(chosen):
            colour = (0.85, 0.85, 0.85, 1.0) if algorithm == "none" else _colour(algorithm, others)
            seen.setdefault(algorithm, colour)
            ax.add_patch(
                Rectangle((x0, edges[k]), x1 - x0, edges[k + 1] - edges[k], facecolor=colour, edgecolor="white", lw=0.4)
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_range[xs[0]][0] * 1e3, x_range[xs[-1]][1] * 1e3)
    low = zero_band[0] if 0.0 in ys else y_range[positive[0]][0]
    ax.set_ylim(low, y_range[positive[-1]][1] if positive else zero_band[1])
    if 0.0 in ys:
        ax.axhline(zero_band[1], color="black", linewidth=0.8)
        ax.text(
            ax.get_xlim()[0], math.sqrt(zero_band[0] * zero_band[1]), " offline 0", va="center", ha="left", fontsize=7
        )
    ax.set_xlabel("online time budget (ms per decision, log scale; a cell spans the budgets from its left edge)")
    ax.set_ylabel("offline time budget (s, log scale)")
    ax.set_title(title + (f"\n{note}" if note else ""), fontsize=10)
    handles = [Patch(facecolor=c, label=("no agent within the bounds" if a == "none" else a)) for a, c in seen.items()]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="best algorithm(s)")
    return fig


def write_experiment(
    results: Results,
    cells: pl.DataFrame,
    out: Path,
    one_sided: bool = False,
    others: list[str] | None = None,
    correction: str | None = None,
    missing: int = 0,
) -> ExperimentReport:
    """Writes the figures and tables of one experiment (the rows of ``cells``) into ``out``.

    ``missing``: cells of this experiment's configuration without a result (not run, failed or
    damaged); the map then says that it is incomplete.
    """
    first = cells.row(0, named=True)
    key = f"{first['experiment']}/{first['prior']}"
    slug = _slug(first["experiment"], first["prior"])
    others = others or []
    basis = "CPU" if set(cells["time_basis"].to_list()) == {"cpu"} else "wall"
    title = (
        f"{first['experiment']} (test {first['test']}, prior {first['prior']}, "
        f"N = {first['n_mdps']}, T = {first['horizon']})"
    )
    horizon = int(first["horizon"])
    per_step = cells.with_columns(
        (pl.col("online_cpu_ci95_per_trajectory") / pl.col("horizon")).alias("_online_halfwidth_per_step")
    )
    figures = {
        "offline": _save(
            _score_figure(per_step, "offline_time", None, 1.0, f"offline {basis} time (s, log scale)", title, others),
            out / f"{slug}-offline",
        ),
        "online": _save(
            _score_figure(
                per_step,
                "online_time_per_step",
                "_online_halfwidth_per_step",
                1e3,
                f"online {basis} time (ms per decision, log scale)",
                title,
                others,
            ),
            out / f"{slug}-online",
        ),
    }
    # The oracle does not compete: it would win every bound it meets.
    competing = cells.filter(~pl.col("kind").is_in(ORACLE_KINDS))
    if competing.height == 0:
        competing = cells
    ids = competing["cell_id"].to_list()
    resolution = max([_resolution(r) for r in competing.iter_rows(named=True)] or [0.0])
    bounds = best_under_bounds(
        competing["algorithm"].to_list(),
        competing["mean"].to_list(),
        competing["offline_time"].to_list(),
        competing["online_time_per_trajectory"].to_list(),
        returns_matrix(results, ids),
        horizon,
        one_sided=one_sided,
        online_halfwidths=competing["online_cpu_ci95_per_trajectory"].fill_null(0.0).to_list(),
        resolution=resolution,
        correction=correction,
    )
    best = best_per_algorithm(cells)
    by_algorithm = {
        row["algorithm"]: returns_matrix(results, [row["cell_id"]])[0] for row in best.iter_rows(named=True)
    }
    figures["ecdf"] = _save(_ecdf_figure(by_algorithm, title, others), out / f"{slug}-ecdf")
    curves = regret_curves(results, cells)
    if curves:
        colours = {c.label: _colour(algorithm, others) for algorithm, c in curves.items()}
        figure = plot_cumulative_regret(list(curves.values()), title=title, colours=colours)
        figures["regret"] = _save(figure, out / f"{slug}-regret")
        frame = pl.concat([c.to_polars().with_columns(pl.lit(a).alias("algorithm")) for a, c in curves.items()])
        frame = frame.select("algorithm", pl.exclude("algorithm"))
        write_atomic(out / f"{slug}-regret.csv", frame.write_csv().encode())
    regret_note = ""
    if not curves and "has_rewards" in cells.columns and cells["has_rewards"].any():
        regret_note = (
            "Some cells recorded per-step rewards, but no regret figure is drawn: it needs an Optimal cell and at "
            "least one other cell of this experiment with recorded rewards."
        )
    note = f"incomplete: {missing} cells of this experiment have no result" if missing else ""
    figures["bounds"] = _save(_bounds_figure(bounds, title, others, note), out / f"{slug}-bounds")
    write_atomic(
        out / f"{slug}-bounds.csv", bounds.with_columns(pl.col("algorithms").list.join(" ")).write_csv().encode()
    )
    tables = {
        "md": write_atomic(out / f"{slug}-table.md", table_markdown(cells).encode()),
        "tex": write_atomic(out / f"{slug}-table.tex", table_latex(cells, title).encode()),
        "csv": write_atomic(out / f"{slug}-table.csv", table_csv(cells).encode()),
    }
    return ExperimentReport(
        key=key, slug=slug, figures=figures, tables=tables, bounds=bounds, missing=missing, regret_note=regret_note
    )


def regret_curves(results: Results, cells: pl.DataFrame) -> dict[str, RegretCurve]:
    """The cumulative regret against the oracle of each algorithm's best setting (highest mean)
    among ``cells`` (one experiment's), from their recorded per-step rewards, by algorithm (each
    curve labelled with its setting); empty when the oracle's cell or every other cell lacks them.

    Raises:
        ValueError: the cells are not all on the same test MDPs (test, N, seed, T).
    """
    if "has_rewards" not in cells.columns:
        return {}
    recorded = cells.filter(pl.col("has_rewards"))
    oracle = recorded.filter(pl.col("kind").is_in(ORACLE_KINDS))
    competing = recorded.filter(~pl.col("kind").is_in(ORACLE_KINDS))
    if oracle.height == 0 or competing.height == 0:
        return {}
    # Same test distribution, number of MDPs and seed: the same MDPs; and the same horizon.
    for column in ("test", "n_mdps", "seed", "horizon", "gamma"):
        if recorded[column].n_unique() > 1:
            raise ValueError(f"cells of one experiment differ in {column}: their regrets cannot be paired")
    reference = rewards_matrix(results, oracle["cell_id"][0])
    return {
        row["algorithm"]: regret_curve(rewards_matrix(results, row["cell_id"]), reference, row["label"])
        for row in best_per_algorithm(competing).iter_rows(named=True)
    }


def _missing_by_experiment(results_dir: Path) -> dict[str, int]:
    """Cells of the folder's configuration without a usable result, per experiment key (empty if
    the folder has no configuration, e.g. cells copied by hand)."""
    from .grid import load_output_config, status

    try:
        config = load_output_config(results_dir, check_agents=False)
    except (FileNotFoundError, ValueError):
        return {}
    state = status(config, results_dir)
    missing: dict[str, int] = {}
    for cell in [*state.missing, *(c for c, _ in state.failed), *(c for c, _ in state.broken)]:
        missing[cell.experiment.key] = missing.get(cell.experiment.key, 0) + 1
    return missing


def _host_summary(cells: pl.DataFrame) -> str:
    """Where and how the times were measured, for the report's header."""
    if "host_cpu" not in cells.columns or cells["host_cpu"].null_count() == cells.height:
        return "The host was not recorded (results of an older bbrl): times are wall times."
    parts = []
    hosts = cells.group_by("host_cpu", "host_vector_extensions", "host_logical_cores", maintain_order=True).len()
    for row in hosts.iter_rows(named=True):
        parts.append(
            f"{html.escape(str(row['host_cpu']))} ({row['host_logical_cores']} logical cores; vector extensions: "
            f"{html.escape(str(row['host_vector_extensions']) or 'none detected')}; {row['len']} cells)"
        )
    loads = cells["host_load_average"].drop_nulls().drop_nans()
    threads = sorted(set(cells["threads"].drop_nulls().to_list()))
    load = f"{loads.min():.2f} to {loads.max():.2f}" if loads.len() else "unknown"
    return (
        "Measured on " + "; ".join(parts) + f". Worker threads: {', '.join(map(str, threads))}. "
        f"1-minute load average at the end of each cell: {load}. "
        "Times are CPU times (per trajectory on the thread that ran it; offline, every thread of the "
        "process), wall times are kept in the CSV tables. Agents that learn nothing offline have offline "
        "time 0 by declaration."
    )


def _best_settings(results: Results, cells: pl.DataFrame) -> dict[str, dict[str, np.ndarray]]:
    """Per experiment key, the per-MDP returns of each algorithm's best setting (highest mean)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    best = best_per_algorithm(cells, within=("experiment", "prior"))
    for row in best.iter_rows(named=True):
        key = f"{row['experiment']}/{row['prior']}"
        out.setdefault(key, {})[row["algorithm"]] = returns_matrix(results, [row["cell_id"]])[0]
    return out


@dataclass
class NormalizedSummary:
    """Normalised scores of each algorithm's best setting.

    ``per_experiment``: one row per (experiment, algorithm) with the mean normalised score and its
    95% interval; ``aggregate``: one row per algorithm present in every normalisable experiment,
    with the IQM and the mean over all (experiment, MDP) scores and their stratified-bootstrap 95%
    intervals, and the probability that it improves on the best of the others. ``skipped`` names
    the experiments without both a Random and an Optimal cell (nothing to normalise by)."""

    per_experiment: pl.DataFrame
    aggregate: pl.DataFrame
    scores: dict[str, dict[str, np.ndarray]]
    skipped: list[str]


def normalized_summary(results: Results, cells: pl.DataFrame, seed: int = 0) -> NormalizedSummary:
    """Normalised scores ``(score - Random) / (Optimal - Random)`` per experiment, with Random and
    Optimal the experiment's mean scores of those agents, and their aggregates over experiments."""
    scores: dict[str, dict[str, np.ndarray]] = {}
    skipped: list[str] = []
    rows = []
    random_name, optimal_name = agents.Random.display, agents.Optimal.display
    for key, by_algorithm in _best_settings(results, cells).items():
        if random_name not in by_algorithm or optimal_name not in by_algorithm:
            skipped.append(key)
            continue
        low, high = float(by_algorithm[random_name].mean()), float(by_algorithm[optimal_name].mean())
        if not high > low:
            skipped.append(key)
            continue
        scores[key] = {}
        for algorithm, returns in by_algorithm.items():
            if algorithm == optimal_name:
                continue
            normalized = normalized_scores(returns, low, high)
            scores[key][algorithm] = normalized
            mean, half = mean_ci95(normalized)
            rows.append({"experiment": key, "algorithm": algorithm, "mean": mean, "ci95": half})
    per_experiment = pl.DataFrame(
        rows, schema={"experiment": pl.String, "algorithm": pl.String, "mean": pl.Float64, "ci95": pl.Float64}
    )
    keys = list(scores)
    common = [a for a in dict.fromkeys(a for k in keys for a in scores[k]) if all(a in scores[k] for k in keys)]
    aggregate_rows = []
    for algorithm in common:
        strata = [scores[k][algorithm] for k in keys]
        iqm_estimate, iqm_low, iqm_high = stratified_bootstrap_ci(strata, "iqm", seed=seed)
        mean_estimate, mean_low, mean_high = stratified_bootstrap_ci(strata, "mean", seed=seed)
        aggregate_rows.append(
            {
                "algorithm": algorithm,
                "iqm": iqm_estimate,
                "iqm_low": iqm_low,
                "iqm_high": iqm_high,
                "mean": mean_estimate,
                "mean_low": mean_low,
                "mean_high": mean_high,
            }
        )
    aggregate = pl.DataFrame(
        aggregate_rows,
        schema={
            "algorithm": pl.String,
            **{c: pl.Float64 for c in ("iqm", "iqm_low", "iqm_high", "mean", "mean_low", "mean_high")},
        },
    ).sort("iqm", descending=True)
    if aggregate.height:
        leader = aggregate["algorithm"][0]
        improvement = [
            math.nan
            if a == leader
            else probability_of_improvement([scores[k][leader] for k in keys], [scores[k][a] for k in keys])
            for a in aggregate["algorithm"].to_list()
        ]
        aggregate = aggregate.with_columns(pl.Series("p_leader_better", improvement, dtype=pl.Float64))
    return NormalizedSummary(per_experiment, aggregate, scores, skipped)


def _normalized_figure(summary: NormalizedSummary, others: list[str]):
    """IQM and mean normalised score of each algorithm over every experiment, with 95%
    stratified-bootstrap intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = summary.aggregate
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 0.45 * max(3, frame.height) + 1.2), sharey=True)
    names = frame["algorithm"].to_list()
    ys = np.arange(len(names))[::-1]
    for ax, what in zip(axes, ("iqm", "mean"), strict=True):
        for y, row in zip(ys, frame.iter_rows(named=True), strict=True):
            colour = _colour(row["algorithm"], others)
            ax.plot([row[f"{what}_low"], row[f"{what}_high"]], [y, y], color=colour, linewidth=6, alpha=0.6)
            ax.plot([row[what]], [y], marker="|", color="black", markersize=12)
        ax.axvline(0.0, color="0.5", linewidth=0.8, linestyle=":")
        ax.axvline(1.0, color="0.5", linewidth=0.8, linestyle=":")
        ax.set_xlabel(f"{'IQM' if what == 'iqm' else 'mean'} of normalised scores")
        ax.grid(True, axis="x", alpha=0.3)
    axes[0].set_yticks(ys)
    axes[0].set_yticklabels(names)
    fig.suptitle(
        f"Normalised scores over {len(summary.scores)} experiments (0: Random, 1: Optimal), "
        "95% stratified-bootstrap intervals",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def _ecdf_figure(by_algorithm: dict[str, np.ndarray], title: str, others: list[str]):
    """The distribution over the test MDPs of each algorithm's best setting's return (ECDF)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    for algorithm, returns in by_algorithm.items():
        x = np.sort(returns)
        y = np.arange(1, x.size + 1) / x.size
        style = "--" if algorithm == agents.Optimal.display else "-"
        ax.step(x, y, where="post", linestyle=style, color=_colour(algorithm, others), label=algorithm)
    ax.set_xlabel("discounted return of one test MDP")
    ax.set_ylabel("fraction of test MDPs with at most this return")
    ax.set_title(title + "\neach algorithm's best setting", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="algorithm", title_fontsize=8)
    return fig


def _probability(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.2f}"


def _normalized_html(summary: NormalizedSummary) -> str:
    if not summary.scores:
        return "<p>No experiment has both a Random and an Optimal cell: no normalised scores.</p>"
    head = "<tr><th>Algorithm</th><th>IQM [95%]</th><th>Mean [95%]</th><th>P(leader better)</th></tr>"
    body = "".join(
        f"<tr><td>{html.escape(r['algorithm'])}</td><td>{r['iqm']:.3f} [{r['iqm_low']:.3f}, {r['iqm_high']:.3f}]</td>"
        f"<td>{r['mean']:.3f} [{r['mean_low']:.3f}, {r['mean_high']:.3f}]</td>"
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
.warn { background: #fff3cd; padding: 0.5em; border-left: 4px solid #e0a800; }
figure { margin: 1em 0; } figure img { max-width: 100%; } figcaption { font-size: 0.9em; color: #555; }
"""


def write_report(
    results_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    one_sided: bool = False,
    correction: str | None = None,
) -> Path:
    """Writes the report of the grid results in ``results_dir`` into ``out``; returns ``report.html``.

    ``correction="holm"`` corrects the paired tests of each map cell for their multiplicity
    (:func:`bbrl.stats.holm`).
    """
    results = load(results_dir)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    cells = results.cells
    missing = _missing_by_experiment(Path(results_dir))
    algorithms = list(dict.fromkeys(cells["algorithm"].to_list()))
    others = [a for a in algorithms if a not in _ORDER]
    reports = []
    for _key, sub in cells.group_by(["experiment", "prior"], maintain_order=True):
        key = f"{sub['experiment'][0]}/{sub['prior'][0]}"
        reports.append(write_experiment(results, sub, folder, one_sided, others, correction, missing.get(key, 0)))
    summary = normalized_summary(results, cells)
    normalized_part = _normalized_html(summary)
    if summary.aggregate.height:
        figure = _save(_normalized_figure(summary, others), folder / "normalized-scores")
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
        f"<p>Results of <code>{html.escape(str(results_dir))}</code>: {cells.height} agent settings, "
        f"{len(reports)} experiments; bbrl {html.escape(__version__)}. Scores are mean discounted returns with "
        "95% intervals (1.96 s/√N), drawn on every point; lines join each algorithm's Pareto front (its "
        "settings no other of its settings beats on both time and score). Bold rows: each algorithm's best "
        "setting. The map of best algorithms keeps, under each pair of time budgets, the best algorithm and those "
        f"not significantly different from it (paired Z-test, {test}); grey: no agent within the budgets. A cell "
        "spans the budgets from its lower edge (the bound) to the next bound. Agents whose online times are not "
        "distinguishable (overlapping 95% intervals of their mean time per trajectory, or closer than the clock's "
        f"resolution) count as equally fast. {multiplicity}</p>",
        f"<p>{_host_summary(cells)}</p>",
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
    ]
    for r in reports:
        parts.append(f'<section id="{r.slug}"><h2>Experiment {html.escape(r.key)}</h2>')
        if r.missing:
            parts.append(f'<p class="warn">Incomplete: {r.missing} cells of this experiment have no result.</p>')
        if r.regret_note:
            parts.append(f'<p class="warn">{html.escape(r.regret_note)}</p>')
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
        sub = cells.filter((pl.col("experiment") + "/" + pl.col("prior")) == r.key)
        parts.append(f"<h3>Results table</h3><p>Also as {tables}.</p>{_table_html(sub)}</section>")
    parts.append("</body></html>")
    return write_atomic(folder / "report.html", "\n".join(parts).encode())
