"""The report's figures (matplotlib): score against offline and online time with each algorithm's
Pareto front, the map of the best algorithms under time bounds, the ECDF of returns and the
normalised scores; stable colours, markers and line styles per algorithm.

What a reader can trust: a time of zero by declaration (an agent that learns nothing offline) is
drawn in its own panel labelled "none", never at an invented time on the log axis; every time axis
states one unit, chosen from its data among the tables' units (:mod:`bbrl.analysis.formatting`);
the oracle's level never sets the agents' scale (far from them, it is a note at the axis' edge);
the palette differs in lightness (greyscale) and every algorithm has its own marker."""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from .. import agents
from ..protocol.schema import Col
from .axes import apply_log_ticks, save_figure, spread_overlaps
from .formatting import duration_unit
from .scores import ORACLE_KINDS, NormalizedSummary
from .stats import BOUND_FACTOR

__all__ = [
    "ALGORITHM_ORDER",
    "OTHER_PALETTE",
    "PALETTE",
    "algorithm_colour",
    "algorithm_linestyle",
    "algorithm_marker",
    "bounds_figure",
    "coinciding",
    "ecdf_figure",
    "greyscale",
    "is_python_agent",
    "normalized_figure",
    "pareto_front",
    "save_figure",
    "score_figure",
    "time_unit",
]

#: Stable colours: an algorithm has the same colour in every figure and report, by its place in the
#: registry of agent kinds (:func:`bbrl.agents.kinds`).
ALGORITHM_ORDER = tuple(cls.display for cls in agents.kinds().values())

#: One colour per place in the registry's order, from the colour-blind-safe sets of Okabe and Ito
#: and of Paul Tol, chosen so that no two have the same lightness (:func:`greyscale`: at least 0.04
#: apart, none paler than 0.7, so that each shows on white) and neighbours in the order differ in
#: hue. Python agents continue the cycle with other markers.
PALETTE = (
    "#000000",  # Random: black
    "#E69F00",  # e-Greedy: orange
    "#0072B2",  # Soft-max: blue
    "#D55E00",  # BEB: vermillion
    "#009988",  # BAMCP: teal
    "#CC79A7",  # BFS3: reddish purple
    "#1A1A80",  # SBOSS: navy
    "#66CCEE",  # PSRL: cyan
    "#882255",  # Optimal (oracle): wine
    "#0B4F0B",  # Formula: dark green
    "#CC6677",  # OPPS-DS: rose
)

#: Python agents (not in the registry) take these in turn: none is a registry colour, so that a map
#: cell, which has no marker, never shows a Python agent in a built-in's colour (maps also dot
#: them, which tells them apart in greyscale).
OTHER_PALETTE = (
    "#999933",  # olive
    "#AA4499",  # purple
    "#6699CC",  # steel blue
    "#997700",  # ochre
    "#BBBBBB",  # grey
)

#: How a map marks a Python agent's share of a cell (white dots; black stripes mark boundary cells).
PYTHON_AGENT_HATCH = ".."

#: How a map marks a cell whose verdict a configuration stopped by a race could have changed
#: (:func:`bbrl.analysis.racing.race_sensitive_cells`): the other diagonal than a boundary's, so
#: that a cell both marked and a boundary is cross-hatched.
RACE_SENSITIVE_HATCH = "\\\\\\"
#: The legend's entry for those cells.
RACE_SENSITIVE_LABEL = "race: a stopped configuration\ncould change this cell"

#: The patterns of algorithms sharing a map cell (tied), by their place in the map's legend: no
#: diagonal (a boundary's ``///``, a race's other diagonal) and no dots (a Python agent's).
_TIE_HATCHES = ("--", "||", "oo", "++", "**", "OO")

#: As many markers as colours plus two, so that (colour, marker) pairs do not repeat for
#: len(PALETTE) * len(_MARKERS) algorithms.
_MARKERS = "os^vD<>phX*Pd"

_LINESTYLES = ("-", "--", "-.", ":")

#: Characters per line of a map's note under its title (10 pt text: about 9 inches, the room
#: centred over the map between the canvas' left edge and the legend).
_NOTE_CHARACTERS = 100

#: Size of a setting's marker in the score figures (points).
_MARKER_SIZE = 6.0

#: The oracle's level is drawn inside the agents' axes only if it lies within this many spans of
#: the agents' scores beyond their range (the agents then keep two thirds of the height at least).
_REFERENCE_REACH = 0.5


def _place(algorithm: str, others: list[str]) -> int:
    """The algorithm's place: in the registry's order, then among the ``others`` (Python agents)."""
    if algorithm in ALGORITHM_ORDER:
        return ALGORITHM_ORDER.index(algorithm)
    return len(ALGORITHM_ORDER) + others.index(algorithm)


def greyscale(colour: object) -> float:
    """The lightness of a colour printed in greyscale (ITU-R BT.601 luma: 0.299 R + 0.587 G +
    0.114 B of the sRGB values), 0 black to 1 white."""
    import matplotlib.colors

    r, g, b, _ = matplotlib.colors.to_rgba(colour)  # type: ignore[arg-type]
    return 0.299 * r + 0.587 * g + 0.114 * b


def algorithm_colour(algorithm: str, others: list[str]) -> tuple[float, ...]:
    import matplotlib.colors

    if algorithm in ALGORITHM_ORDER:
        return matplotlib.colors.to_rgba(PALETTE[ALGORITHM_ORDER.index(algorithm) % len(PALETTE)])
    return matplotlib.colors.to_rgba(OTHER_PALETTE[others.index(algorithm) % len(OTHER_PALETTE)])


def is_python_agent(algorithm: str) -> bool:
    """Whether an algorithm of a figure is outside the registry (a Python agent), drawn dotted in maps."""
    return algorithm not in ALGORITHM_ORDER and algorithm != "none"


def algorithm_marker(algorithm: str, others: list[str]) -> str:
    index = _place(algorithm, others)
    return _MARKERS[index % len(_MARKERS)]


def algorithm_linestyle(algorithm: str, others: list[str]) -> str:
    return _LINESTYLES[_place(algorithm, others) % len(_LINESTYLES)]


def time_unit(seconds: object) -> tuple[str, float]:
    """(unit, its length in seconds) for an axis of these durations: the tables' unit
    (:func:`bbrl.analysis.formatting.duration_unit`) of their median positive value; seconds if
    none is positive."""
    values = np.asarray(seconds, dtype=np.float64).ravel()
    values = values[np.isfinite(values) & (values > 0.0)]
    if values.size == 0:
        return "s", 1.0
    return duration_unit(float(np.median(values)))


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


def _reach(low: float, high: float) -> tuple[float, float, float]:
    """(lowest, highest, span) of the agents' values, span > 0."""
    span = high - low if high > low else max(abs(high), 1.0) * 0.1
    return low, high, span


def _reference_note(ax: object, text: str, above: bool, row: int) -> None:
    """A note at the top (or bottom) edge of ``ax`` with an arrow pointing out of the axes: a
    level that lies off the scale, named and given as a number rather than drawn."""
    y_edge, y_text = (1.0, 0.93 - 0.08 * row) if above else (0.0, 0.07 + 0.08 * row)
    ax.annotate(  # type: ignore[attr-defined]
        text,
        xy=(0.99, y_edge),
        xycoords="axes fraction",
        xytext=(0.99, y_text),
        textcoords="axes fraction",
        ha="right",
        va="top" if above else "bottom",
        fontsize=8,
        arrowprops={"arrowstyle": "->", "color": "0.35", "relpos": (0.97, 1.0 if above else 0.0)},
        bbox={"boxstyle": "round", "fc": "white", "ec": "0.35", "lw": 0.6},
    )


def _draw_references(axes: list, note_ax: object, references: list[tuple[str, float]], low, high) -> None:
    """Sets the score axis to the agents' range (``low``/``high``: their interval ends) and draws
    each reference level there if it is near that range; a level further away is a note at the
    axes' edge, so that it never flattens the agents."""
    low = np.asarray(low, dtype=np.float64)
    high = np.asarray(high, dtype=np.float64)
    finite = np.isfinite(low) & np.isfinite(high)
    if not finite.any():
        for name, level in references:
            for ax in axes:
                ax.axhline(level, color="0.35", linestyle="--", linewidth=1.0, label=f"{name}, reference")
        return
    lo, hi, span = _reach(float(low[finite].min()), float(high[finite].max()))
    bottom, top = lo - 0.06 * span, hi + 0.06 * span
    off_scale = []
    for name, level in references:
        if lo - _REFERENCE_REACH * span <= level <= hi + _REFERENCE_REACH * span:
            for ax in axes:
                label = f"{name}, reference" if ax is note_ax else None
                ax.axhline(level, color="0.35", linestyle="--", linewidth=1.0, label=label)
            bottom, top = min(bottom, level - 0.06 * span), max(top, level + 0.06 * span)
        else:
            off_scale.append((name, level))
    for ax in axes:
        ax.set_ylim(bottom, top)
    rows = {True: 0, False: 0}
    for name, level in off_scale:
        above = level > hi
        where = "above" if above else "below"
        _reference_note(note_ax, f"{name}, reference: {level:.3g} ({where} this scale)", above, rows[above])
        rows[above] += 1


def _settings(panel, x, y, yerr, xerr, stopped, style: dict, hollow: dict, label: str | None, bars: list) -> str | None:
    """Draws one algorithm's settings on ``panel``: markers (those that ran every MDP filled with
    ``style``, those a race stopped hollow with ``hollow``), and appends their 95% intervals to
    ``bars`` (segments and colours, drawn as one collection per panel: an errorbar per algorithm
    made several artists each, a large part of a report's drawing time). The legend's ``label``
    goes on the filled markers; returns it if still unused (no filled marker here)."""
    colour = style["color"]
    for k in range(len(x)):
        if np.isfinite(yerr[k]):
            bars.append((((x[k], y[k] - yerr[k]), (x[k], y[k] + yerr[k])), colour))
        if xerr is not None and (xerr[0][k] > 0 or xerr[1][k] > 0):
            bars.append((((x[k] - xerr[0][k], y[k]), (x[k] + xerr[1][k], y[k])), colour))
    for hollowed in (False, True):
        chosen = np.asarray(stopped, dtype=bool) == hollowed
        if not chosen.any():
            continue
        panel.plot(
            x[chosen], y[chosen], linestyle="none", label=None if hollowed else label,
            **(hollow if hollowed else style),
        )  # fmt: skip
        if not hollowed:
            label = None
    return label


def _legend_inches(labels: list[str], fontsize: float = 8.0) -> float:
    """A generous estimate of the width of an outside legend with these labels (inches): the
    figures reserve it beside their axes, so that the canvas holds the legend."""
    longest = max((len(line) for label in labels for line in label.split("\n")), default=8)
    return 0.55 + longest * fontsize * 0.6 / 72.0


def score_figure(
    cells: pl.DataFrame,
    x_column: str,
    x_halfwidth: str | None,
    quantity: str,
    title: str,
    others: list[str],
    per: str = "",
    zero_label: str = "none",
):
    """Mean score against a time (``x_column``, seconds), one marker per setting with its 95%
    interval (vertical: the score; horizontal: the mean time, from ``x_halfwidth`` in seconds, where
    measured per trajectory), and each algorithm's Pareto front as its line.

    The time axis is logarithmic in one unit chosen from the data (:func:`time_unit`), labelled
    ``"{quantity} ({unit}{per}, log scale)"``, with at least three labelled ticks
    (:func:`~bbrl.analysis.axes.log_ticks`). Times of zero (declared: no offline computation) are
    drawn in a narrow panel of their own on the left, labelled ``zero_label``, each algorithm at
    its own place. Markers that would hide each other are spread sideways by a marker's width
    (:func:`~bbrl.analysis.axes.spread_overlaps`; the axis label then says so). The oracle is a
    dashed reference level, or a note at the edge when it lies far from the agents' scores
    (:func:`_draw_references`). A configuration a race stopped early (non-null
    ``race_stopped_by``) is drawn hollow, its score and interval over the test MDPs it ran; the
    legend then says so."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    competitors = cells.filter(~pl.col(Col.KIND).is_in(ORACLE_KINDS))
    stopped_column = (
        competitors[Col.RACE_STOPPED_BY].is_not_null()
        if Col.RACE_STOPPED_BY in competitors.columns
        else pl.Series([False] * competitors.height, dtype=pl.Boolean)
    )
    competitors = competitors.with_columns(stopped_column.alias("_stopped"))
    seconds = competitors[x_column].cast(pl.Float64).to_numpy()
    unit, size = time_unit(seconds)
    order = list(dict.fromkeys(competitors[Col.ALGORITHM].to_list()))
    zero_algorithms = list(dict.fromkeys(competitors.filter(pl.col(x_column) == 0.0)[Col.ALGORITHM].to_list()))
    has_positive = bool((seconds > 0.0).any())
    references = [
        (row[Col.ALGORITHM], float(row[Col.MEAN]))
        for row in cells.filter(pl.col(Col.KIND).is_in(ORACLE_KINDS)).iter_rows(named=True)
    ]
    any_stopped = bool(competitors["_stopped"].any())
    legend_labels = [*order, *(f"{name}, reference" for name, _ in references)]
    if any_stopped:
        legend_labels.append("(settings; score over the")
    legend = _legend_inches(legend_labels)
    plot_width, height = 7.0, 4.4
    none_ax = ax = None
    if zero_algorithms and has_positive:
        width = min(0.35 * len(zero_algorithms) + 0.4, 2.5)
        fig, (none_ax, ax) = plt.subplots(
            1, 2, figsize=(plot_width + width + legend + 1.0, height), sharey=True,
            gridspec_kw={"width_ratios": [width, plot_width], "wspace": 0.03},
        )  # fmt: skip
    elif zero_algorithms:
        fig, none_ax = plt.subplots(figsize=(4.0 + legend + 1.0, height))
    else:
        fig, ax = plt.subplots(figsize=(plot_width + legend + 1.0, height))
    fig.subplots_adjust(left=0.9 / fig.get_figwidth(), right=1.0 - (legend + 0.1) / fig.get_figwidth(), bottom=0.2)
    panels = [a for a in (none_ax, ax) if a is not None]
    main = ax if ax is not None else none_ax
    ci = np.nan_to_num(competitors[Col.CI95].cast(pl.Float64).to_numpy())
    means = competitors[Col.MEAN].cast(pl.Float64).to_numpy()
    _draw_references(panels, main, references, means - ci, means + ci)
    # Every point first, in its panel's data coordinates, so that the axes' limits are final before
    # markers that would overlap are spread apart.
    points = []  # (algorithm, panel, x, y, yerr, xerr or None, stopped, time)
    by_algorithm = {key[0]: part for key, part in competitors.partition_by(Col.ALGORITHM, as_dict=True).items()}
    for algorithm in order:
        sub = by_algorithm[algorithm]
        t = sub[x_column].cast(pl.Float64).to_numpy()
        y = sub[Col.MEAN].cast(pl.Float64).to_numpy()
        yerr = sub[Col.CI95].cast(pl.Float64).to_numpy()
        stopped = sub["_stopped"].to_numpy()
        zero = t == 0.0
        if zero.any() and none_ax is not None:
            # One place per algorithm; its settings side by side around it.
            m = int(zero.sum())
            xs = zero_algorithms.index(algorithm) + (np.arange(m) - (m - 1) / 2) * min(0.6 / m, 0.2)
            points.append((algorithm, none_ax, xs, y[zero], yerr[zero], None, stopped[zero], t[zero]))
        positive = t > 0.0
        if positive.any() and ax is not None:
            x = t[positive] / size
            xerr = None
            if x_halfwidth is not None and x_halfwidth in sub.columns:
                h = np.nan_to_num(sub[x_halfwidth].cast(pl.Float64).to_numpy()[positive]) / size
                xerr = np.vstack([np.minimum(h, x * 0.5), h])  # a log axis shows no time <= 0
            points.append((algorithm, ax, x, y[positive], yerr[positive], xerr, stopped[positive], t[positive]))
    if none_ax is not None:
        none_ax.set_xlim(-0.6, len(zero_algorithms) - 0.4)
    if ax is not None:
        ax.set_xscale("log")
        xs = np.concatenate([p[2] for p in points if p[1] is ax])
        low = np.concatenate([p[2] - (0 if p[5] is None else p[5][0]) for p in points if p[1] is ax])
        high = np.concatenate([p[2] + (0 if p[5] is None else p[5][1]) for p in points if p[1] is ax])
        lo, hi = float(np.min(low[low > 0], initial=xs.min())), float(high.max())
        margin = max((hi / lo) ** 0.06, 1.15)
        apply_log_ticks(ax.xaxis, lo / margin, hi * margin, ax.get_position().width * fig.get_figwidth())
    spread = False
    for panel in panels:
        mine = [k for k, p in enumerate(points) if p[1] is panel]
        if not mine:
            continue
        x_all = np.concatenate([points[k][2] for k in mine])
        y_all = np.concatenate([points[k][3] for k in mine])
        moved_x, moved = spread_overlaps(panel, x_all, y_all, width_points=_MARKER_SIZE + 1.0)
        spread |= moved
        start = 0
        for k in mine:
            n = points[k][2].size
            points[k] = (*points[k][:2], moved_x[start : start + n], *points[k][3:])
            start += n
    proxies: dict[str, tuple[str, tuple[float, ...]]] = {}
    bars: dict[object, list] = {}
    labels_left = dict.fromkeys(order, True)
    for algorithm, panel, x, y, yerr, xerr, stopped, t in points:
        colour, marker = algorithm_colour(algorithm, others), algorithm_marker(algorithm, others)
        style = {
            "marker": marker, "markersize": _MARKER_SIZE, "color": colour, "markeredgecolor": "0.1",
            "markeredgewidth": 0.5, "zorder": 2.5,
        }  # fmt: skip
        # A configuration stopped by a race: hollow, its edge in the algorithm's colour.
        hollow = {**style, "markerfacecolor": "white", "markeredgecolor": colour, "markeredgewidth": 1.3}
        proxies[algorithm] = (marker, colour)
        label = algorithm if labels_left[algorithm] else None
        left = _settings(panel, x, y, yerr, xerr, stopped, style, hollow, label, bars.setdefault(panel, []))
        labels_left[algorithm] = labels_left[algorithm] and left is not None
        if panel is ax:
            # The front over every setting of the algorithm (a time of 0 beats any positive one);
            # drawn between its settings with a positive time, through their drawn places.
            all_t = by_algorithm[algorithm][x_column].cast(pl.Float64).to_numpy()
            all_y = by_algorithm[algorithm][Col.MEAN].cast(pl.Float64).to_numpy()
            front = [i for i in pareto_front(np.nan_to_num(all_t, nan=np.inf), all_y) if all_t[i] > 0.0]
            if len(front) > 1:
                place = {float(v): float(d) for v, d in zip(t, x, strict=True)}
                ax.plot(
                    [place[float(all_t[i])] for i in front], all_y[front],
                    linestyle=algorithm_linestyle(algorithm, others), linewidth=0.9, color=colour,
                )  # fmt: skip
    for panel, segments in bars.items():
        if segments:
            lines = LineCollection([s for s, _ in segments], colors=[c for _, c in segments], linewidths=0.8)
            panel.add_collection(lines, autolim=False)
    if none_ax is not None:
        none_ax.set_facecolor("0.93")
        none_ax.set_xticks([])
        none_ax.set_xlabel(zero_label)
        none_ax.grid(True, axis="y", alpha=0.3)
    if ax is not None:
        sideways = "; markers spread sideways where they overlap" if spread else ""
        ax.set_xlabel(f"{quantity} ({unit}{per}, log scale{sideways})")
        ax.grid(True, which="major", alpha=0.3)
    panels[0].set_ylabel("mean discounted return (95% interval)")
    main.set_title(title, y=1.01)  # a fixed place: placing it automatically measures every tick label
    entries: dict[str, object] = {}
    for panel in panels:
        for handle, text in zip(*panel.get_legend_handles_labels(), strict=True):
            entries.setdefault(text, handle)
    # The algorithms in their order, then the reference levels.
    for algorithm in order:
        if algorithm not in entries:
            # The entry of an algorithm whose every setting was stopped: a filled marker all the same.
            marker, colour = proxies[algorithm]
            entries[algorithm] = Line2D(
                [], [], linestyle="none", marker=marker, markersize=_MARKER_SIZE, color=colour, markeredgecolor="0.1",
                markeredgewidth=0.5,
            )  # fmt: skip
    labels = sorted(entries, key=lambda text: order.index(text) if text in order else len(order))
    handles = [entries[text] for text in labels]
    if any_stopped:
        n_stopped = int(competitors["_stopped"].sum())
        labels.append(
            f"hollow: stopped early by the race\n({n_stopped} setting{'s' if n_stopped > 1 else ''}; score over the\n"
            "test MDPs run: wider interval)"
        )
        handles.append(
            Line2D([], [], linestyle="none", marker="o", markersize=6, markerfacecolor="white", markeredgecolor="0.1")
        )
    # Outside the axes, so that the legend never hides a point.
    main.legend(
        handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="algorithm", title_fontsize=8
    )
    return fig


def _edges(bounds: list[float], factor: float) -> list[tuple[float, float]]:
    """The range of budgets each bound stands for: from the bound up to the next one (the last up
    to one factor more). A budget in that range admits at least the agents within the bound."""
    return [(b, bounds[k + 1] if k + 1 < len(bounds) else b * factor) for k, b in enumerate(bounds)]


def _last_ratio(bounds: list[float]) -> float:
    """The ratio of the last two bounds (the lattice's step there), for the last cell's width."""
    return bounds[-1] / bounds[-2] if len(bounds) >= 2 and bounds[-2] > 0 else BOUND_FACTOR


def bounds_figure(bounds: pl.DataFrame, title: str, others: list[str], note: str = "", quantity: str = "time"):
    """The best algorithms for each pair of budgets, each cell drawn over the range of budgets it
    stands for (edges at the bounds), both axes logarithmic with at least three labelled ticks.

    The offline budget 0 (agents that learn nothing offline only) is not a range of budgets: it is
    a strip of its own below the map, apart from the log scale. A cell shared by algorithms not
    significantly different is split in stripes, each also hatched with its algorithm's pattern
    (the legend's), so that tied colours can be told apart; a boundary cell is hatched ``///``, and
    a cell of a raced map whose verdict a stopped configuration could have changed (its column
    ``race_sensitive``) with the other diagonal (:data:`RACE_SENSITIVE_HATCH`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PathCollection
    from matplotlib.patches import Patch
    from matplotlib.path import Path

    xs = sorted(set(bounds["online_bound_seconds_per_step"].to_list()))
    ys = sorted(set(bounds["offline_bound_seconds"].to_list()))
    positive = [y for y in ys if y > 0.0]
    x_range = dict(zip(xs, _edges(xs, _last_ratio(xs)), strict=True))
    y_range = dict(zip(positive, _edges(positive, _last_ratio(positive)), strict=True))
    x_unit, x_size = time_unit(xs)
    y_unit, y_size = time_unit(positive)
    algorithms = list(dict.fromkeys(a for row in bounds["algorithms"].to_list() for a in row if a != "none"))
    hatches = {a: _TIE_HATCHES[k % len(_TIE_HATCHES)] for k, a in enumerate(algorithms)}
    marked = "race_sensitive" in bounds.columns and bool(bounds["race_sensitive"].any())
    race_lines = RACE_SENSITIVE_LABEL.split("\n") if marked else []
    legend = _legend_inches([*algorithms, "boundary: depends on a cost", "no agent within the bounds", *race_lines])
    plot_width, map_height, strip_height, gap = 7.0, 3.6 if positive else 0.0, 0.45, 0.3
    # The note in lines that fit over the map (centred on it, with the margin and the legend's
    # room): a longer line reached past the canvas, which then grew and was drawn a second time.
    note_lines = _wrap(note, _NOTE_CHARACTERS) if note else []
    left, bottom, top = 1.0, 0.75, 0.57 + 0.18 * len(note_lines) if note_lines else 0.5
    width = left + plot_width + 0.1 + legend
    height = bottom + (strip_height + gap if 0.0 in ys else 0.0) + map_height + top
    fig = plt.figure(figsize=(width, height))
    strip = main = None
    if 0.0 in ys:
        strip = fig.add_axes((left / width, bottom / height, plot_width / width, strip_height / height))
    if positive:
        lower = bottom + (strip_height + gap if strip is not None else 0.0)
        main = fig.add_axes((left / width, lower / height, plot_width / width, map_height / height))
    seen: dict[str, tuple[float, ...]] = {}
    shared: set[str] = set()
    any_boundary = any_race = False
    # The cells as a few collections (fills, then each hatch in each ink), not a patch each:
    # adding and drawing hundreds of patches was most of a map's time.
    layers: dict[tuple[object, str | None, str | None], list] = {}
    for row in bounds.iter_rows(named=True):
        x0, x1 = (v / x_size for v in x_range[row["online_bound_seconds_per_step"]])
        offline = row["offline_bound_seconds"]
        ax, (y0, y1) = (strip, (0.0, 1.0)) if offline == 0.0 else (main, (v / y_size for v in y_range[offline]))
        chosen = row["algorithms"]
        # Several algorithms not significantly different share the cell in horizontal stripes.
        edges = (
            np.linspace(y0, y1, len(chosen) + 1)
            if ax is strip
            else np.exp(np.linspace(math.log(y0), math.log(y1), len(chosen) + 1))
        )
        for k, algorithm in enumerate(chosen):
            colour = (0.85, 0.85, 0.85, 1.0) if algorithm == "none" else algorithm_colour(algorithm, others)
            seen.setdefault(algorithm, colour)
            box = (x0, edges[k]), x1 - x0, edges[k + 1] - edges[k]
            layers.setdefault((ax, None, None), []).append((box, colour))
            hatch = PYTHON_AGENT_HATCH if is_python_agent(algorithm) else None
            if len(chosen) > 1 and algorithm != "none":
                shared.add(algorithm)
                hatch = hatches[algorithm] if hatch is None else hatch
            ink = _contrast(colour)
            if hatch:
                layers.setdefault((ax, hatch, ink), []).append((box, None))
            if row.get("boundary"):
                # The answer depends on which side of a bound a cost falls within its uncertainty.
                any_boundary = True
                layers.setdefault((ax, "///", ink), []).append((box, None))
            if row.get("race_sensitive"):
                # A configuration the race stopped could have decided this cell otherwise.
                any_race = True
                layers.setdefault((ax, RACE_SENSITIVE_HATCH, ink), []).append((box, None))
    for (ax, hatch, ink), boxes in layers.items():
        if hatch is None:
            # The outlines as paths: a Rectangle patch per cell cost more to make than to draw.
            outlines = [_box_path(*box) for box, _ in boxes]
            fills = PathCollection(outlines, facecolors=[c for _, c in boxes], edgecolors="white", linewidths=0.4)
            ax.add_collection(fills, autolim=False)
        else:
            # A hatch layer as one path: Agg renders the hatch's tile once per path, and the dense
            # patterns (circles, stars) cost more to render than the cells they fill. Snapped as each
            # rectangle was (to whole pixels: the cells' hatches meet as before).
            outline = Path.make_compound_path(*(_box_path(*box) for box, _ in boxes))
            lines = PathCollection([outline], facecolors="none", edgecolors=ink, linewidths=0.0, hatch=hatch, snap=True)
            ax.add_collection(lines, autolim=False)
    x_lo, x_hi = x_range[xs[0]][0] / x_size, x_range[xs[-1]][1] / x_size
    for ax in (main, strip):
        if ax is None:
            continue
        ax.set_xscale("log")
        apply_log_ticks(ax.xaxis, x_lo, x_hi, plot_width, widen=False)
    if main is not None:
        main.set_yscale("log")
        y_lo, y_hi = y_range[positive[0]][0] / y_size, y_range[positive[-1]][1] / y_size
        apply_log_ticks(main.yaxis, y_lo, y_hi, map_height, widen=False)
        main.set_ylabel(f"offline {quantity} budget\n({y_unit}, log scale)")
        if strip is not None:
            main.tick_params(axis="x", labelbottom=False)
    if strip is not None:
        strip.set_ylim(0.0, 1.0)
        strip.set_yticks([0.5], ["none\n(offline 0)"])
        if main is None:
            strip.set_ylabel(f"offline {quantity}\nbudget")
    bottom_ax = strip if strip is not None else main
    bottom_ax.set_xlabel(
        f"online {quantity} budget ({x_unit} per decision, log scale; a cell spans the budgets from its left edge)"
    )
    top_ax = main if main is not None else strip
    # y = 1: where matplotlib would place it (nothing is drawn above the map), without measuring
    # every tick label to find that out.
    top_ax.set_title("\n".join([title, *note_lines]), fontsize=10, y=1.0)
    handles = [
        Patch(
            facecolor=c,
            edgecolor=_contrast(c),
            lw=0.0,
            hatch=PYTHON_AGENT_HATCH if is_python_agent(a) else hatches.get(a) if a in shared else None,
            label=("no agent within the bounds" if a == "none" else a),
        )
        for a, c in seen.items()
    ]
    if any_boundary:
        handles.append(
            Patch(
                facecolor="white",
                edgecolor="black",
                hatch="///",
                label="boundary: depends on a cost\nwithin its uncertainty",
            )
        )
    if any_race:
        handles.append(
            Patch(facecolor="white", edgecolor="black", hatch=RACE_SENSITIVE_HATCH, label=RACE_SENSITIVE_LABEL)
        )
    title = "best algorithm(s)" + ("\n(tied: stripes, hatched)" if shared else "")
    top_ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title=title, title_fontsize=8
    )
    return fig


def _box_path(corner: tuple[float, float], width: float, height: float):
    """The closed outline of the rectangle with lower-left ``corner`` and this size (data units)."""
    from matplotlib.path import Path

    (x, y), x1, y1 = corner, corner[0] + width, corner[1] + height
    return Path([(x, y), (x1, y), (x1, y1), (x, y1), (x, y)], closed=True)


def _contrast(colour: object) -> str:
    """Black or white, whichever shows on ``colour`` (hatches and edges drawn over it)."""
    return "black" if greyscale(colour) > 0.45 else "white"


def normalized_figure(summary: NormalizedSummary, others: list[str]):
    """IQM and mean normalised score of each algorithm over every experiment, with 95%
    stratified-bootstrap intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = summary.aggregate
    names = frame[Col.ALGORITHM].to_list()
    left = _legend_inches(names, fontsize=10.0)
    height = max(4.5, 0.45 * frame.height + 1.2)  # the report's first figure: most of a screen
    fig, axes = plt.subplots(1, 2, figsize=(8.0 + left, height), sharey=True, sharex=True)
    # A fixed layout: the names' room on the left, a gap between the panels wide enough for their
    # edge labels (tight_layout measured every text, a draw's worth of time).
    fig.subplots_adjust(left=left / (8.0 + left), right=0.98, wspace=0.25, bottom=0.6 / height, top=1 - 0.5 / height)
    ys = np.arange(len(names))[::-1]
    for ax, what in zip(axes, ("iqm", "mean"), strict=True):
        for y, row in zip(ys, frame.iter_rows(named=True), strict=True):
            colour = algorithm_colour(row[Col.ALGORITHM], others)
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
    return fig


def coinciding(by_algorithm: dict[str, np.ndarray]) -> list[list[str]]:
    """The algorithms in groups whose sorted returns are the same within a thousandth of the
    returns' span (their ECDFs would be drawn on top of each other), in the given order."""
    sorted_returns = {a: np.sort(np.asarray(r, dtype=np.float64)) for a, r in by_algorithm.items()}
    finite = [r[np.isfinite(r)] for r in sorted_returns.values() if r.size]
    values = np.concatenate(finite) if finite else np.empty(0)
    tolerance = 1e-3 * float(values.max() - values.min()) if values.size else 0.0
    groups: list[list[str]] = []
    for algorithm, returns in sorted_returns.items():
        for group in groups:
            other = sorted_returns[group[0]]
            if other.shape == returns.shape and np.allclose(other, returns, rtol=0.0, atol=tolerance, equal_nan=True):
                group.append(algorithm)
                break
        else:
            groups.append([algorithm])
    return groups


def ecdf_figure(by_algorithm: dict[str, np.ndarray], title: str, others: list[str]):
    """The distribution over the test MDPs of each algorithm's best setting's return (ECDF).
    Algorithms whose distributions coincide (:func:`coinciding`) are drawn once, in the first one's
    style, their names listed in that line's legend entry. The oracle's distribution is drawn
    dashed if it lies near the agents' returns, else named with its range at the axis' edge, so
    that it does not squeeze the agents' curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    oracle = agents.Optimal.display
    groups = coinciding(by_algorithm)
    names = [
        " = ".join(group) if len(group) <= 2 else f"{group[0]} and {len(group) - 1} more:\n" + ", ".join(group[1:])
        for group in groups
    ]
    legend = _legend_inches([line for name in names for line in _wrap(name, 34)])
    fig, ax = plt.subplots(figsize=(7.0 + legend + 1.0, 4.4))
    fig.subplots_adjust(
        left=0.9 / fig.get_figwidth(), right=1.0 - (legend + 0.1) / fig.get_figwidth(), bottom=0.15, top=0.86
    )
    agent_returns = [np.asarray(r, dtype=np.float64) for a, r in by_algorithm.items() if a != oracle]
    values = np.concatenate(agent_returns) if agent_returns else np.empty(0)
    values = values[np.isfinite(values)]
    limits = None
    for group, name in zip(groups, names, strict=True):
        algorithm = group[0]
        returns = by_algorithm[algorithm]
        x = np.sort(returns)
        y = np.arange(1, x.size + 1) / x.size
        if oracle in group and values.size:
            lo, hi, span = _reach(float(values.min()), float(values.max()))
            if not (lo - _REFERENCE_REACH * span <= x[0] and x[-1] <= hi + _REFERENCE_REACH * span):
                limits = (lo - 0.04 * span, hi + 0.04 * span)
                side = "right" if x[-1] > hi else "left"
                ax.annotate(
                    f"{oracle}: returns {x[0]:.3g} to {x[-1]:.3g} ({side} of this scale)",
                    xy=(1.0 if side == "right" else 0.0, 0.5),
                    xycoords="axes fraction",
                    xytext=(0.97 if side == "right" else 0.03, 0.5),
                    textcoords="axes fraction",
                    ha="right" if side == "right" else "left",
                    va="center",
                    fontsize=8,
                    arrowprops={"arrowstyle": "->", "color": "0.35"},
                    bbox={"boxstyle": "round", "fc": "white", "ec": "0.35", "lw": 0.6},
                )
                continue
        style = "--" if algorithm == oracle else algorithm_linestyle(algorithm, others)
        width = 1.2 if len(group) == 1 else 2.2
        label = "\n".join(_wrap(name, 34))
        ax.step(x, y, where="post", linestyle=style, color=algorithm_colour(algorithm, others), label=label, lw=width)
    if limits is not None:
        ax.set_xlim(*limits)
    ax.set_xlabel("discounted return of one test MDP")
    ax.set_ylabel("fraction of test MDPs with at most this return")
    shared = sum(len(g) > 1 for g in groups)
    ax.set_title(
        title + "\neach algorithm's best setting" + ("; coinciding distributions drawn once (thick)" if shared else ""),
        fontsize=10,
        y=1.0,  # where matplotlib would place it, without measuring every tick label to find that out
    )
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="algorithm", title_fontsize=8)
    return fig


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken at spaces (its own line breaks kept)."""
    import textwrap

    return [line for part in text.split("\n") for line in (textwrap.wrap(part, width) or [""])]
