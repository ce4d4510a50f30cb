"""Legends drawn once and pasted as pixels into the next figures with the same legend: the PNGs
are the same, pixel for pixel, as when every figure draws its own legends (each on the pixel
grid), and a legend is drawn again where pasting would not give that (something under it, another
kind of handle, another place on the pixel grid)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.patches import Patch
from PIL import Image

from bbrl.analysis import legend_pixels
from bbrl.analysis.axes import save_figure

NAMES = [f"algorithm {i}" for i in range(12)]


def _figure(width: float = 9.0, points: int = 5, under_legend: bool = False, handles: str = "lines"):
    fig, ax = plt.subplots(figsize=(width, 4.0))
    fig.subplots_adjust(right=1.0 - 2.4 / width)
    rng = np.random.default_rng(points)
    for i, name in enumerate(NAMES):
        ax.plot(rng.random(points), rng.random(points), marker="osv^<>"[i % 6], linestyle="none", label=name)
    if under_legend:
        # A note in the figure's margin, where the legend goes.
        fig.text(1.0 - 2.0 / width, 0.7, "a note under the legend", fontsize=9)
    if handles == "patches":
        ax.legend(
            handles=[Patch(facecolor=f"C{i}", hatch="//" if i % 2 else None, label=n) for i, n in enumerate(NAMES)],
            loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="best", title_fontsize=8,
        )  # fmt: skip
    elif handles == "scatter":
        ax.scatter([0.5], [0.5], label="a scatter")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    else:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="algorithm", title_fontsize=8)
    return fig


def _pixels(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"))


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(legend_pixels, "_kept", {})


@pytest.fixture(autouse=True)
def no_open_figures() -> Iterator[None]:
    # Figures other tests left open count towards matplotlib's warning about many open figures.
    plt.close("all")
    yield
    plt.close("all")


def _drawn_each_time(monkeypatch: pytest.MonkeyPatch, make, path: Path) -> np.ndarray:
    with monkeypatch.context() as m:
        m.setattr(legend_pixels, "legend_key", lambda legend: None)
        save_figure(make(), path, formats=("png",))
    return _pixels(path.with_suffix(".png"))


@pytest.mark.parametrize(
    "second",
    [
        {"points": 7},  # the same legend over other data: pasted
        {"points": 7, "under_legend": True},  # something under the legend: drawn again
        {"width": 9.37},  # the anchor on another fraction of a pixel: snapped to the grid, pasted
        {"handles": "patches"},  # patches (the maps' legends)
        {"handles": "scatter"},  # a kind of handle the cache does not know: always drawn
    ],
)
def test_a_figure_is_the_same_whether_its_legend_is_pasted_or_drawn(
    second: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: None
) -> None:
    pasted: list[tuple[int, bool]] = []
    paste = legend_pixels.paste

    def counted(hidden: list, rgba: np.ndarray) -> bool:
        done = paste(hidden, rgba)
        pasted.append((len(hidden), done))
        return done

    monkeypatch.setattr(legend_pixels, "paste", counted)
    first_kwargs = {"handles": second["handles"]} if "handles" in second else {}
    save_figure(_figure(**first_kwargs), tmp_path / "first", formats=("png",))
    save_figure(_figure(**second), tmp_path / "second", formats=("png",))
    expected = _drawn_each_time(monkeypatch, lambda: _figure(**second), tmp_path / "reference")
    assert np.array_equal(_pixels(tmp_path / "second.png"), expected)
    assert np.array_equal(
        _pixels(tmp_path / "first.png"), _drawn_each_time(monkeypatch, lambda: _figure(**first_kwargs), tmp_path / "r1")
    )
    second_paste = pasted[1] if len(pasted) > 1 else None
    if second.get("handles") == "scatter":
        assert not legend_pixels._kept and not pasted  # never kept
    elif second.get("under_legend"):
        assert len(legend_pixels._kept) == 1 and second_paste == (1, False)  # refused: drawn again
    else:
        assert len(legend_pixels._kept) == 1 and second_paste == (1, True)  # the first's reused


def test_legends_that_differ_are_kept_apart(fresh: None) -> None:
    a, b = _figure(), _figure()
    b.axes[0].get_legend().get_texts()[3].set_text("another name")
    c = _figure()
    c.axes[0].get_legend().legend_handles[2].set_markeredgecolor("red")
    keys = [legend_pixels.legend_key(f.axes[0].get_legend()) for f in (a, b, c)]
    assert None not in keys and len(set(keys)) == 3
    d = _figure()
    d.axes[0].get_legend().set_bbox_to_anchor((1.01, 0.0, 0.3, 1.0))  # a box, not a point
    assert legend_pixels.legend_key(d.axes[0].get_legend()) is None
    # A matplotlib whose legends lack what the key reads: drawn each time, not an error.
    e = _figure()
    del e.axes[0].get_legend().legend_handles
    assert legend_pixels.legend_key(e.axes[0].get_legend()) is None
    for f in (a, b, c, d, e):
        plt.close(f)


def test_the_legend_is_shown_again_after_a_paste(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: None) -> None:
    # The SVG, drawn after the PNG, draws the legend itself.
    pasted: list[bool] = []
    paste = legend_pixels.paste
    monkeypatch.setattr(legend_pixels, "paste", lambda hidden, rgba: pasted.append(paste(hidden, rgba)) or pasted[-1])
    save_figure(_figure(), tmp_path / "a", formats=("png",))
    fig = _figure()
    legend = fig.axes[0].get_legend()
    save_figure(fig, tmp_path / "b", formats=("png", "svg"))
    assert pasted[-1] and legend.get_visible() and (tmp_path / "b.svg").stat().st_size > 0


def test_an_outside_legend_is_put_on_the_pixel_grid_for_the_draw_only(tmp_path: Path, fresh: None) -> None:
    fig = _figure(width=9.37)
    legend = fig.axes[0].get_legend()
    before = legend.get_bbox_to_anchor().bounds
    fig.set_dpi(100)
    moved = legend_pixels.snap_anchors(fig)
    column, row = legend_pixels._anchor(legend)
    assert len(moved) == 1 and column == int(column) and row == int(row)
    assert abs(column - before[0]) <= 0.5 and abs(legend.get_bbox_to_anchor().y0 - before[1]) <= 0.5
    legend_pixels.unsnap(moved)
    assert legend.get_bbox_to_anchor().bounds == before
    # save_figure gives it back too (an SVG drawn next places it as matplotlib does).
    save_figure(fig, tmp_path / "grid", formats=("png",))
    assert legend.get_bbox_to_anchor().bounds == before
    # A legend anchored by a box, or inside the axes, is left where it is.
    other = _figure()
    other.axes[0].get_legend().set_bbox_to_anchor((1.01, 0.0, 0.3, 1.0))
    assert legend_pixels.snap_anchors(other) == []
    plt.close(other)
