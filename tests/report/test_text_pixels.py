"""Texts rasterized once and reused by the report's renderer: a figure's pixels do not depend on
which texts were drawn before, the reused image is drawn where matplotlib's own renderer draws the
text (within the rounding to whole pixels), and texts it does not handle go to matplotlib."""

from __future__ import annotations

from collections.abc import Iterator

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.font_manager import FontProperties

from bbrl.analysis import text_pixels

LABEL = "online CPU time (µs per decision, log scale)"


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(text_pixels, "_kept", {})
    plt.close("all")
    yield
    plt.close("all")


def _ink(renderer: RendererAgg, draw) -> np.ndarray:
    """How dark each pixel is (0 white .. 255 black) after ``draw(renderer, gc)`` on a cleared canvas."""
    renderer.clear()
    gc = renderer.new_gc()
    gc.set_foreground("black")
    draw(renderer, gc)
    gc.restore()
    return 255.0 - np.asarray(renderer.buffer_rgba())[..., 0].astype(np.float64)


def _centre(ink: np.ndarray) -> np.ndarray:
    rows, columns = np.mgrid[: ink.shape[0], : ink.shape[1]]
    return np.array([(ink * columns).sum(), (ink * rows).sum()]) / ink.sum()


@pytest.mark.parametrize("angle", [0.0, 90.0])
@pytest.mark.parametrize("text", ["10", "Random", LABEL])
def test_a_text_lies_where_matplotlib_draws_it(text: str, angle: float) -> None:
    size, dpi = 10.0, 100.0
    prop = FontProperties(size=size)
    ours = text_pixels.renderer_class()(600, 600, dpi)
    theirs = RendererAgg(600, 600, dpi)
    x, y = 100.3, 450.6
    with matplotlib.rc_context({"text.hinting": "none"}):
        mine = _ink(ours, lambda r, gc: r.draw_text(gc, x, y, text, prop, angle))
        reference = _ink(theirs, lambda r, gc: r.draw_text(gc, x, y, text, prop, angle))
    # The same glyphs: as much ink within a fifth (FreeType's grey levels differ between a whole
    # string and one glyph at a time), centred within a pixel and a half plus 1% of the text's
    # length (whole pixels against 64ths, the whole string's advances against each glyph's) of
    # matplotlib's own placement.
    assert mine.sum() == pytest.approx(reference.sum(), rel=0.2)
    length_px = len(text) * size * 0.6 * dpi / 72.0
    assert np.abs(_centre(mine) - _centre(reference)).max() <= 1.5 + 0.01 * length_px


def test_a_figure_is_the_same_whatever_was_drawn_before(tmp_path) -> None:
    from bbrl.analysis.axes import save_figure

    def figure(ylabel: str):
        fig, ax = plt.subplots(figsize=(4, 3))
        ax.plot([1, 10, 100], [3, 1, 2], marker="o", label="Random")
        ax.set_xscale("log")
        ax.set_xlabel(LABEL)
        ax.set_ylabel(ylabel)
        ax.set_title("GC (test GC, prior UGC)")
        return fig

    first = save_figure(figure("score"), tmp_path / "first", ("png",))["png"].read_bytes()
    kept = len(text_pixels._kept)
    assert kept > 0
    again = save_figure(figure("score"), tmp_path / "again", ("png",))["png"].read_bytes()
    assert again == first and len(text_pixels._kept) == kept  # every text reused, none added
    save_figure(figure("another label"), tmp_path / "other", ("png",))
    assert len(text_pixels._kept) == kept + 1


def test_the_kept_texts_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_pixels, "_KEPT", 3)
    renderer = text_pixels.renderer_class()(200, 100, 100.0)
    for text in ["a", "b", "c", "d", "e"]:
        _ink(renderer, lambda r, gc, t=text: r.draw_text(gc, 10.0, 50.0, t, FontProperties(size=9), 0.0))
    assert [key[0] for key in text_pixels._kept] == ["c", "d", "e"]


@pytest.mark.parametrize("case", ["math", "old font"])
def test_texts_it_does_not_handle_are_drawn_by_matplotlib(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if case == "old font":
        # A matplotlib whose fonts lack one of the whole-string calls.
        monkeypatch.setattr(text_pixels, "_WHOLE_STRING_CALLS", (*text_pixels._WHOLE_STRING_CALLS, "no_such_call"))
    text, ismath = ("$x^2$", True) if case == "math" else ("Random", False)
    prop = FontProperties(size=10)
    ours = text_pixels.renderer_class()(200, 100, 100.0)
    theirs = RendererAgg(200, 100, 100.0)
    mine = _ink(ours, lambda r, gc: r.draw_text(gc, 20.3, 60.6, text, prop, 0.0, ismath=ismath))
    reference = _ink(theirs, lambda r, gc: r.draw_text(gc, 20.3, 60.6, text, prop, 0.0, ismath=ismath))
    assert mine.sum() > 0 and np.array_equal(mine, reference)
    assert text_pixels._kept == {}


def test_the_line_heights_it_gives_matplotlib_are_the_ones_matplotlib_reads(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The renderer gives matplotlib each font's line height (read once); a figure with texts of
    # several sizes and lines is the same, pixel for pixel, as when matplotlib reads them itself.
    from bbrl.analysis.axes import save_figure

    def figure():
        fig, ax = plt.subplots(figsize=(4, 3))
        ax.plot([1, 2], [3, 1], label="a name\non two lines")
        ax.set_ylabel("offline budget\n(ms, log scale)")
        ax.set_title("a title", fontsize=13)
        ax.legend(fontsize=7, title="algorithm", title_fontsize=8)
        return fig

    given = save_figure(figure(), tmp_path / "given", ("png",))["png"].read_bytes()
    monkeypatch.setattr(text_pixels, "_heights", {})
    monkeypatch.delattr(text_pixels.renderer_class(), "_get_font_height_metrics")
    read = save_figure(figure(), tmp_path / "read", ("png",))["png"].read_bytes()
    assert given == read
