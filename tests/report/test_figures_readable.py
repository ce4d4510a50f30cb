"""Every figure of a smoke report read as a reader would: each log axis has at least three
labelled ticks, and no two texts (titles, labels, tick labels, legends, notes) overlap on the
page, measured with the renderer's own bounding boxes after the figure is drawn."""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from bbrl.analysis.axes import DPI, MIN_LOG_TICKS


def _drawn(fig):
    fig.set_dpi(DPI)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _labelled_ticks(axis) -> list[str]:
    low, high = sorted(axis.get_view_interval())
    return [
        tick.label1.get_text()
        for tick in axis.get_major_ticks()
        if tick.label1.get_visible()
        and tick.label1.get_text()
        and low * (1 - 1e-9) <= tick.get_loc() <= high * (1 + 1e-9)
    ]


def test_the_smoke_report_draws_every_kind_of_figure(smoke_report) -> None:
    kinds = {name.rsplit("-", 1)[1] for name in smoke_report.figures}
    assert kinds == {"offline", "online", "bounds", "ecdf", "regret", "scores"}, kinds


def test_every_log_axis_has_three_labelled_ticks(smoke_report) -> None:
    checked = 0
    for name, fig in smoke_report.figures.items():
        _drawn(fig)
        for ax in fig.axes:
            for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
                if scale != "log":
                    continue
                # An axis shared with a panel above it states its ticks there, not twice.
                labels = _labelled_ticks(axis)
                if not labels and any(other is not ax and other.get_xscale() == "log" for other in fig.axes):
                    continue
                checked += 1
                assert len(labels) >= MIN_LOG_TICKS, (name, axis.axis_name, labels)
    assert checked >= 3 * 2


def _undrawn_tick_labels(fig) -> set[int]:
    """The tick labels matplotlib keeps but does not draw (their tick outside the axis' view)."""
    out = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            span = high - low
            for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                if not (low - 1e-9 * span <= tick.get_loc() <= high + 1e-9 * span):
                    out.update((id(tick.label1), id(tick.label2)))
    return out


def overlapping_texts(fig) -> list[tuple[str, str]]:
    """The pairs of drawn texts of ``fig`` whose boxes share more than a pixel's sliver."""
    renderer = _drawn(fig)
    undrawn = _undrawn_tick_labels(fig)
    boxes = []
    for text in fig.findobj(Text):
        if not (text.get_visible() and text.get_text().strip()) or id(text) in undrawn:
            continue
        box = text.get_window_extent(renderer)
        if box.width > 0 and box.height > 0:
            boxes.append((text.get_text(), box))
    pairs = []
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        overlap_x = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
        overlap_y = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
        if overlap_x > 1.0 and overlap_y > 1.0:
            pairs.append((a, b))
    return pairs


def test_the_overlap_check_sees_two_texts_on_top_of_each_other() -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.text(0.5, 0.5, "first note")
    ax.text(0.52, 0.5, "second note")
    assert ("first note", "second note") in overlapping_texts(fig)
    plt.close(fig)


def test_no_two_texts_overlap(smoke_report) -> None:
    for name, fig in smoke_report.figures.items():
        assert len(fig.findobj(Text)) >= 5, name
        assert overlapping_texts(fig) == [], name
