"""The report's axis rules on their own: three labelled ticks on a narrow log range, coinciding
distributions drawn once, markers that would overlap spread apart; and its PNGs."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from bbrl.analysis.axes import MIN_LOG_TICKS, log_ticks, png_bytes, save_figure, spread_overlaps, widen_for_ticks
from bbrl.analysis.figures import coinciding, ecdf_figure


def test_a_narrow_log_range_gets_three_labelled_ticks() -> None:
    # OPPS-DS's two offline times of the issue, 29.5 and 138 ms: one decade tick ("100") before.
    ticks = log_ticks(29.5 / 1.2, 138 * 1.2, 7.0)
    assert len(ticks) >= MIN_LOG_TICKS and 100.0 in ticks
    lo, hi = widen_for_ticks(1.0, 1.1)
    assert len(log_ticks(lo, hi, 7.0)) >= MIN_LOG_TICKS and lo < 1.0 < 1.1 < hi
    # A wide range keeps to one tick a decade or sparser.
    assert log_ticks(0.006, 130, 7.0) == [0.01, 0.1, 1.0, 10.0, 100.0]


def test_coinciding_distributions_are_drawn_once_with_their_names() -> None:
    zeros = np.zeros(20)
    by_algorithm = {"A": zeros, "B": zeros.copy(), "C": np.linspace(0, 1, 20), "D": zeros + 1e-9}
    assert coinciding(by_algorithm) == [["A", "B", "D"], ["C"]]
    fig = ecdf_figure(by_algorithm, "t", ["A", "B", "C", "D"])
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert len(labels) == 2 and any("A" in label and "B" in label and "D" in label for label in labels)
    plt.close(fig)


def test_overlapping_markers_are_spread_a_marker_apart() -> None:
    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    x, moved = spread_overlaps(ax, np.array([5.0, 5.01, 8.0]), np.array([5.0, 5.0, 5.0]), width_points=7.0)
    assert moved and x[2] == 8.0
    gap = ax.transData.transform((x[1], 5.0))[0] - ax.transData.transform((x[0], 5.0))[0]
    assert abs(gap - 7.0 * 100 / 72) < 1e-6  # a marker's width apart, around their centre
    assert abs((x[0] + x[1]) / 2 - 5.005) < 1e-9
    plt.close(fig)


def test_a_figure_png_decodes_to_its_pixels_and_figures_of_one_size_share_a_renderer(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for shape in ((1, 1, 3), (7, 5, 3), (40, 33, 3)):
        rgb = rng.integers(0, 256, size=shape, dtype=np.uint8)
        decoded = Image.open(io.BytesIO(png_bytes(rgb)))
        assert decoded.mode == "RGB" and (np.asarray(decoded) == rgb).all()
    with pytest.raises(ValueError, match="uint8"):
        png_bytes(np.zeros((2, 2, 4), dtype=np.uint8))
    # Two figures of one size drawn one after the other on one renderer, the first after the
    # second again: each PNG is the pixels of its own figure.
    pngs = {}
    for order in (("a", "b"), ("b", "a")):
        for name in order:
            fig, ax = plt.subplots(figsize=(3, 2))
            ax.plot([0, 1], [0, 1] if name == "a" else [1, 0], label=name)
            ax.legend()
            path = save_figure(fig, tmp_path / f"{name}-{'-'.join(order)}", ("png",))["png"]
            pngs.setdefault(name, []).append(path.read_bytes())
    assert pngs["a"][0] == pngs["a"][1] and pngs["b"][0] == pngs["b"][1] and pngs["a"][0] != pngs["b"][0]
