"""``bbrl report``: the export of SPEC 5.3 for a grid's results.

Per experiment (test distribution and prior): the three figures (score vs offline time; score vs
online time per decision; the best algorithms under offline/online time bounds) as PNG and SVG,
the oracle (``Optimal``) drawn as a dashed reference level and left out of the map,
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
from .results import Results, load, returns_matrix
from .stats import best_per_algorithm, best_under_bounds

__all__ = ["FIGURES", "ExperimentReport", "write_report"]

#: Figure kinds, their file suffix and caption (the original's captions).
FIGURES = (
    ("offline", "Offline computation cost vs. performance"),
    ("online", "Online computation cost vs. performance"),
    ("bounds", "Best algorithms w.r.t. offline/online time bounds"),
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


def _slug(experiment: str, prior: str) -> str:
    return quote(f"{experiment}-{prior}", safe="-_.").replace("%", "_")


_UNITS = (("d", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


def _duration_parts(seconds: float) -> tuple[str, str]:
    """(number, unit) of a duration in its largest fitting unit among d, h, min, s, ms, µs, ns."""
    for unit, size in _UNITS[:-1]:
        if seconds >= size:
            return f"{seconds / size:.3g}", unit
    return f"{seconds / 1e-9:.3g}", "ns"


def format_duration(seconds: float) -> str:
    """A duration in its largest fitting unit among d, h, min, s, ms, µs, ns; "-" if unknown."""
    if not math.isfinite(seconds):
        return "-"
    number, unit = _duration_parts(seconds)
    return f"{number} {unit}"


def latex_duration(seconds: float) -> str:
    """A duration for LaTeX: a thin space between number and unit, µ as ``\\textmu``."""
    if not math.isfinite(seconds):
        return "--"
    number, unit = _duration_parts(seconds)
    unit = unit.replace("µ", r"\textmu{}")
    return number + r"\," + unit


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
            format_duration(row["offline_seconds"]),
            format_duration(row["online_seconds_per_step"]),
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
            latex_duration(row["offline_seconds"]),
            latex_duration(row["online_seconds_per_step"]),
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
    frame = cells.select(
        "cell_id",
        "algorithm",
        "label",
        "params",
        "details",
        "mean",
        "ci95",
        "offline_seconds",
        "online_seconds_per_trajectory",
        "online_seconds_per_step",
        "n_mdps",
        "gamma",
        "horizon",
        "seed",
        "bbrl_version",
    ).with_columns(pl.col("cell_id").is_in(list(best)).alias("best_of_algorithm"))
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
            f"<td>{format_duration(row['offline_seconds'])}</td>"
            f"<td>{format_duration(row['online_seconds_per_step'])}</td>"
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


def _score_figure(cells: pl.DataFrame, x_column: str, scale: float, xlabel: str, title: str, others: list[str]):
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
        x = np.maximum(sub[x_column].to_numpy() * scale, TIME_FLOOR_SECONDS * scale)
        y = sub["mean"].to_numpy()
        order = np.argsort(x, kind="stable")
        ax.plot(
            x[order],
            y[order],
            marker=_marker(algorithm, others),
            linestyle="-",
            linewidth=0.8,
            markersize=5,
            color=_colour(algorithm, others),
            label=algorithm,
        )
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("mean discounted return over the test MDPs")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    # Outside the axes, so that the legend never hides a point.
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="algorithm", title_fontsize=8)
    return fig


def _bounds_figure(bounds: pl.DataFrame, title: str, others: list[str]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    fig, ax = plt.subplots(figsize=(8.5, 5.2))
    xs = sorted(set(bounds["online_bound_seconds_per_step"].to_list()))
    ys = sorted(set(bounds["offline_bound_seconds"].to_list()))
    # Each grid point is a cell of the log-log plane, from half a step below to half a step above.
    step_x = math.sqrt(xs[1] / xs[0]) if len(xs) > 1 else math.sqrt(5.0)
    step_y = math.sqrt(ys[1] / ys[0]) if len(ys) > 1 else math.sqrt(5.0)
    seen: dict[str, tuple[float, ...]] = {}
    for row in bounds.iter_rows(named=True):
        x = row["online_bound_seconds_per_step"] * 1e3
        y = row["offline_bound_seconds"]
        chosen = row["algorithms"]
        x0, x1 = x / step_x, x * step_x
        y0, y1 = y / step_y, y * step_y
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
    ax.set_xlim(xs[0] * 1e3 / step_x, xs[-1] * 1e3 * step_x)
    ax.set_ylim(ys[0] / step_y, ys[-1] * step_y)
    ax.set_xlabel("online time bound (ms per decision, log scale)")
    ax.set_ylabel("offline time bound (s, log scale)")
    ax.set_title(title)
    handles = [Patch(facecolor=c, label=("no agent within the bounds" if a == "none" else a)) for a, c in seen.items()]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="best algorithm(s)")
    return fig


def write_experiment(
    results: Results, cells: pl.DataFrame, out: Path, one_sided: bool = False, others: list[str] | None = None
) -> ExperimentReport:
    """Writes the figures and tables of one experiment (the rows of ``cells``) into ``out``."""
    first = cells.row(0, named=True)
    key = f"{first['experiment']}/{first['prior']}"
    slug = _slug(first["experiment"], first["prior"])
    others = others or []
    title = (
        f"{first['experiment']} (test {first['test']}, prior {first['prior']}, "
        f"N = {first['n_mdps']}, T = {first['horizon']})"
    )
    horizon = int(first["horizon"])
    figures = {
        "offline": _save(
            _score_figure(cells, "offline_seconds", 1.0, "offline computation time (s, log scale)", title, others),
            out / f"{slug}-offline",
        ),
        "online": _save(
            _score_figure(
                cells,
                "online_seconds_per_step",
                1e3,
                "online computation time (ms per decision, log scale)",
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
    bounds = best_under_bounds(
        competing["algorithm"].to_list(),
        competing["mean"].to_list(),
        competing["offline_seconds"].to_list(),
        competing["online_seconds_per_trajectory"].to_list(),
        returns_matrix(results, ids),
        horizon,
        one_sided=one_sided,
    )
    figures["bounds"] = _save(_bounds_figure(bounds, title, others), out / f"{slug}-bounds")
    write_atomic(
        out / f"{slug}-bounds.csv", bounds.with_columns(pl.col("algorithms").list.join(" ")).write_csv().encode()
    )
    tables = {
        "md": write_atomic(out / f"{slug}-table.md", table_markdown(cells).encode()),
        "tex": write_atomic(out / f"{slug}-table.tex", table_latex(cells, title).encode()),
        "csv": write_atomic(out / f"{slug}-table.csv", table_csv(cells).encode()),
    }
    return ExperimentReport(key=key, slug=slug, figures=figures, tables=tables, bounds=bounds)


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; }
td:nth-child(n+3) { text-align: right; font-variant-numeric: tabular-nums; }
tr.best td { font-weight: bold; }
figure { margin: 1em 0; } figure img { max-width: 100%; } figcaption { font-size: 0.9em; color: #555; }
"""


def write_report(results_dir: str | os.PathLike[str], out: str | os.PathLike[str], one_sided: bool = False) -> Path:
    """Writes the report of the grid results in ``results_dir`` into ``out``; returns ``report.html``."""
    results = load(results_dir)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    cells = results.cells
    algorithms = list(dict.fromkeys(cells["algorithm"].to_list()))
    others = [a for a in algorithms if a not in _ORDER]
    reports = []
    for _key, sub in cells.group_by(["experiment", "prior"], maintain_order=True):
        reports.append(write_experiment(results, sub, folder, one_sided, others))
    test = "one-sided, z ≥ 1.645" if one_sided else "two-sided, z ≥ 1.96"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>bbrl report</title>',
        f"<style>{_CSS}</style></head><body>",
        "<h1>bbrl report</h1>",
        f"<p>Results of <code>{html.escape(str(results_dir))}</code>: {cells.height} agent settings, "
        f"{len(reports)} experiments; bbrl {html.escape(__version__)}. Scores are mean discounted returns with "
        "95% intervals (1.96 s/√N). Bold rows: each algorithm's best setting. The map of best algorithms keeps, "
        f"under each pair of time bounds, the best algorithm and those not significantly different from it "
        f"(paired Z-test, {test}); grey: no agent within the bounds.</p>",
        "<ul>" + "".join(f'<li><a href="#{r.slug}">{html.escape(r.key)}</a></li>' for r in reports) + "</ul>",
    ]
    for r in reports:
        parts.append(f'<section id="{r.slug}"><h2>Experiment {html.escape(r.key)}</h2>')
        for kind, caption in FIGURES:
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
