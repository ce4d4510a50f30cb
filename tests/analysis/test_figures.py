"""Figures a reader can believe: no invented times, one stated unit, the oracle off the agents'
scale, a palette that survives greyscale, and a README that counts the figures right."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors
import numpy as np
import polars as pl
import pytest

from bbrl.analysis import report
from bbrl.analysis.figures import ALGORITHM_ORDER, PALETTE, algorithm_colour, algorithm_marker, is_python_agent
from bbrl.analysis.formatting import format_duration
from bbrl.protocol.results import load
from bbrl.protocol.schema import Col
from smoke_grids import EGREEDY, GRID_UNIFORM, OPTIMAL, RANDOM, SOFTMAX, grid_text, oppsds, run_quietly

README = Path(__file__).resolve().parents[2] / "README.md"

# Grid with the uniform prior: the oracle's return (about 11) is far above every agent's (below 1),
# as in the quick study.
TINY_GRID = grid_text(
    {"n_mdps": 5, "horizon": 40},
    [GRID_UNIFORM, {"name": "Grid", "test": "Grid", "prior": "Grid", "record_rewards": True}],
    [RANDOM, EGREEDY, SOFTMAX, oppsds([5, 20]), OPTIMAL],
)


@pytest.fixture(scope="module")
def tiny_grid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_quietly(TINY_GRID, tmp_path_factory.mktemp("tiny") / "out")


@pytest.fixture(scope="module")
def drawn(tiny_grid: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, dict[str, object], object]:
    """The first experiment's cells, its figures as matplotlib objects (caught before saving) and
    what ``write_experiment`` returned."""
    results = load(tiny_grid)
    cells = results.cells.filter(pl.col(Col.PRIOR) == "UGrid")
    figures: dict[str, object] = {}

    def keep(fig: object, base: Path, formats: tuple[str, ...] = ("png",)) -> dict[str, Path]:
        figures[base.name.rsplit("-", 1)[1]] = fig
        return {"png": base.with_suffix(".png"), "svg": base.with_suffix(".svg")}

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report, "save_figure", keep)
        written = report.write_experiment(results, cells, tmp_path_factory.mktemp("figures"))
    return cells, figures, written


def _points(ax: object) -> list[tuple[np.ndarray, np.ndarray]]:
    """(x, y) of every group of setting markers in ``ax`` (lines of markers without a line)."""
    return [
        (np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float))
        for line in ax.get_lines()  # type: ignore[attr-defined]
        if line.get_marker() not in (None, "None", "") and line.get_linestyle() in ("None", "none", "")
    ]


def _competitors(cells: pl.DataFrame) -> pl.DataFrame:
    return cells.filter(pl.col(Col.ALGORITHM) != "Optimal (oracle)")


def test_agents_without_offline_computation_are_not_drawn_at_an_invented_time(drawn) -> None:
    cells, figures, _ = drawn
    competitors = _competitors(cells)
    offline = competitors[Col.OFFLINE_TIME].to_numpy()
    assert (offline == 0.0).sum() == 4 and (offline > 0.0).sum() == 2  # Random, e-Greedy x2, Soft-max; OPPS-DS x2
    axes = figures["offline"].axes  # type: ignore[attr-defined]
    log_axes = [ax for ax in axes if ax.get_xscale() == "log"]
    flat_axes = [ax for ax in axes if ax.get_xscale() != "log" and _points(ax)]
    # On the log axis only the settings that spent offline time, at their times' own spread (a
    # point at a floor far below them would widen it by orders of magnitude).
    logged = np.concatenate([x for ax in log_axes for x, _ in _points(ax)])
    assert logged.size == 2
    assert logged.max() / logged.min() == pytest.approx(offline.max() / offline[offline > 0].min(), rel=1e-9)
    # The others in a panel of their own, marked "none", each algorithm at its own place.
    assert len(flat_axes) == 1 and flat_axes[0].get_xlabel().startswith("none")
    places = [x for x, _ in _points(flat_axes[0])]
    assert sum(x.size for x in places) == 4 and len(places) == 3
    xs = np.concatenate(places)
    assert len(set(xs.round(9))) == xs.size  # no two settings stacked on one x


def _axis_unit(label: str) -> str:
    match = re.search(r"\((d|h|min|s|ms|µs|ns)\b", label)
    assert match, label
    return match.group(1)


def test_time_axes_state_the_unit_of_their_data(drawn) -> None:
    cells, figures, written = drawn
    competitors = _competitors(cells)
    sizes = {"d": 86400.0, "h": 3600.0, "min": 60.0, "s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}
    online = competitors[Col.ONLINE_TIME_PER_STEP].to_numpy()
    (ax,) = [ax for ax in figures["online"].axes if ax.get_xscale() == "log"]  # type: ignore[attr-defined]
    unit = _axis_unit(ax.get_xlabel())
    # The tables' unit for the typical value (the tables' formatter) ...
    assert format_duration(float(np.median(online))).endswith(" " + unit)
    # ... and the points are the data in that unit (markers that would overlap spread sideways by
    # a marker's width, which the axis says).
    drawn_x = np.sort(np.concatenate([x for x, _ in _points(ax)]))
    spread = "spread sideways" in ax.get_xlabel()
    assert drawn_x == pytest.approx(np.sort(online) / sizes[unit], rel=0.1 if spread else 1e-9)
    assert 1.0 <= float(np.median(drawn_x)) < 1000.0
    # The map of budgets: its online axis too.
    ax = figures["bounds"].axes[0]  # type: ignore[attr-defined]
    unit = _axis_unit(ax.get_xlabel())
    budgets = np.unique(written.bounds["online_bound_seconds_per_step"].to_numpy())
    assert format_duration(float(np.median(budgets))).endswith(" " + unit)
    assert ax.get_xlim()[0] == pytest.approx(budgets.min() / sizes[unit], rel=1e-9)  # the first bound's edge


def test_the_oracle_does_not_set_the_agents_scale(drawn) -> None:
    cells, figures, _ = drawn
    competitors = _competitors(cells)
    optimal = float(cells.filter(pl.col(Col.ALGORITHM) == "Optimal (oracle)")[Col.MEAN][0])
    top = float((competitors[Col.MEAN] + competitors[Col.CI95].fill_nan(0.0)).max())
    bottom = float((competitors[Col.MEAN] - competitors[Col.CI95].fill_nan(0.0)).min())
    assert optimal > top + (top - bottom)  # the case of the issue: far above every agent
    for kind in ("offline", "online"):
        axes = figures[kind].axes  # type: ignore[attr-defined]
        for ax in axes:
            low, high = ax.get_ylim()
            assert low <= bottom and top <= high
            # The agents fill most of the height: the oracle's level is not inside it.
            assert (top - bottom) >= 0.75 * (high - low), (kind, ax.get_ylim())
        notes = [t.get_text() for ax in axes for t in ax.texts]
        assert any("Optimal" in t and f"{optimal:.3g}" in t for t in notes), notes
    # The distribution of returns: the oracle's curve does not stretch the agents' axis either.
    ecdf = figures["ecdf"].axes[0]  # type: ignore[attr-defined]
    agent_lines = [line for line in ecdf.get_lines() if line.get_label() != "Optimal (oracle)"]
    best_agent = max(float(np.max(line.get_xdata())) for line in agent_lines)
    low, high = ecdf.get_xlim()
    assert high - low <= 1.5 * (best_agent - low) and high < optimal
    assert any("Optimal" in t.get_text() for t in ecdf.texts)


def _grey(colour: object) -> float:
    r, g, b, _ = matplotlib.colors.to_rgba(colour)  # type: ignore[arg-type]
    return 0.299 * r + 0.587 * g + 0.114 * b


def test_every_algorithm_has_its_own_colour_and_marker_and_the_colours_survive_greyscale() -> None:
    others = [f"MyAgent{k}" for k in range(40)]
    names = [*ALGORITHM_ORDER, *others]
    pairs = [(tuple(algorithm_colour(a, others)), algorithm_marker(a, others)) for a in names]
    assert len(set(pairs)) == len(names)
    registry = {tuple(algorithm_colour(a, [])) for a in ALGORITHM_ORDER}
    assert len(registry) == min(len(ALGORITHM_ORDER), len(PALETTE))
    greys = sorted(_grey(c) for c in registry)
    # Printed in greyscale, no two of the registry's colours look alike (a registry longer than the
    # palette takes its colours again, with other markers) ...
    assert min(b - a for a, b in itertools.pairwise(greys)) >= 0.04, greys
    # ... and none is so pale that it vanishes on white (OPPS-DS was a pale blue).
    assert max(greys) <= 0.72, greys
    # A map cell has no marker: a Python agent never takes a built-in's colour (MyPSRL was Random's
    # black), and maps hatch it.
    assert not {algorithm_colour(a, others) for a in others} & set(registry)
    assert all(is_python_agent(a) for a in others) and not any(is_python_agent(a) for a in ALGORITHM_ORDER)


def test_the_readme_counts_the_figures_a_report_writes(tiny_grid: Path, tmp_path: Path) -> None:
    text = " ".join(README.read_text().split())
    words = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
    match = re.search(r"with per experiment (?:the )?(\w+) figures", text)
    assert match, "the README's sentence on the report's figures"
    stated = words[match.group(1)]
    regret = re.search(r"a (\w+), the cumulative regret, for an experiment that records per-step rewards", text)
    assert regret, "the README's sentence on the regret figure"
    with_rewards = {"fourth": 4, "fifth": 5, "sixth": 6}[regret.group(1)]
    report.write_report(tiny_grid, tmp_path, svg=True)
    for slug, expected in (("Grid-UGrid", stated), ("Grid-Grid", with_rewards)):
        pngs = sorted(tmp_path.glob(f"{slug}-*.png"))
        assert len(pngs) == len(list(tmp_path.glob(f"{slug}-*.svg"))) == expected, pngs


def test_an_algorithm_in_both_panels_is_listed_once_in_order_before_the_references() -> None:
    from bbrl.analysis.figures import score_figure

    cells = pl.DataFrame(
        {
            Col.KIND: ["formula", "formula", "oppsds", "optimal"],
            Col.ALGORITHM: ["Formula", "Formula", "OPPS-DS", "Optimal (oracle)"],
            Col.MEAN: [1.0, 1.1, 1.2, 1.3],
            Col.CI95: [0.2, 0.2, 0.2, 0.2],
            Col.OFFLINE_TIME: [0.0, 0.5, 2.0, 0.0],
        }
    )
    fig = score_figure(cells, Col.OFFLINE_TIME, None, "offline CPU time", "mixed", [])
    none_panel, log_panel = fig.axes[:2]
    assert [x.tolist() for x, _ in _points(none_panel)] == [[0.0]]
    assert sorted(float(v) for x, _ in _points(log_panel) for v in x) == [0.5, 2.0]  # in s
    labels = [t.get_text() for t in log_panel.get_legend().get_texts()]
    assert labels == ["Formula", "OPPS-DS", "Optimal (oracle), reference"]


def test_regret_curves_take_the_reports_line_styles():
    from bbrl.analysis.figures import algorithm_linestyle
    from bbrl.analysis.regret import plot_cumulative_regret, regret_curve

    rng = np.random.default_rng(0)
    optimal = rng.random((4, 6))
    curves = [regret_curve(optimal - 0.1 * (i + 1), optimal, f"agent {i}") for i in range(3)]
    names = [c.label for c in curves]
    styles = {name: algorithm_linestyle(name, names) for name in names}
    assert len(set(styles.values())) == 3  # apart in greyscale, not only by colour
    figure = plot_cumulative_regret(curves, linestyles=styles)
    lines = [line for line in figure.axes[0].get_lines() if line.get_label() in styles]
    assert {line.get_label(): line.get_linestyle() for line in lines} == styles


def test_a_regret_legend_by_final_value_lists_the_curves_as_they_end():
    from bbrl.analysis.regret import plot_cumulative_regret, regret_curve

    rng = np.random.default_rng(1)
    optimal = rng.random((5, 8))
    # Regret per step 0.3, 0.1, 0.2: the curves end in the order b, c, a from the top.
    gaps = {"a": 0.1, "b": 0.3, "c": 0.2}
    curves = [regret_curve(optimal - gap, optimal, label) for label, gap in gaps.items()]
    names = {"a": "Alpha", "b": "Beta", "c": "Gamma"}
    figure = plot_cumulative_regret(curves, names=names, legend_by_final=True)
    texts = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    # 8 steps: final means 2.40, 1.60, 0.800, with a zero half-width (every MDP has the same gap).
    assert texts == ["Beta: 2.40 ± 0.00", "Gamma: 1.60 ± 0.00", "Alpha: 0.800 ± 0.000"]
