"""Readable axes and cheap saving for the report's figures: log axes with at least three labelled
ticks, markers spread apart where they would hide each other, and a PNG drawn once.

A log axis labelled by matplotlib's default locator shows one number when its data span less than
a decade ("100" under two points at 29.5 and 138 ms): :func:`log_ticks` picks the densest of the
series 10^k, 1-2-5, 1-2-3-5-7, 1..9 and 1..9 with 1.5 and 2.5 that fits the axis' length, widening a narrow range until
three ticks are labelled. :func:`spread_overlaps` moves markers that would be drawn on top of each
other sideways by a marker's width (the figures say so on their axis). :func:`save_figure` draws
the figure once on the Agg canvas and crops the white margin from the pixels (``bbox_inches="tight"``
draws it twice, and its text layout was most of a report's time), on a renderer shared by the
figures of one size (matplotlib caches text metrics per renderer: the experiments' figures of one
kind repeat most of their texts), and written as an unfiltered PNG; SVG on request. A legend an
earlier figure drew is pasted from its pixels rather than drawn again
(:mod:`~bbrl.analysis.legend_pixels`: the score and distribution figures of every experiment
repeat theirs), and so is a text (:mod:`~bbrl.analysis.text_pixels`: the tick labels, axis labels
and names repeat across figures).
"""

from __future__ import annotations

import io
import math
import struct
import threading
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..fileio import write_atomic
from . import legend_pixels, text_pixels

__all__ = [
    "DPI",
    "MIN_LOG_TICKS",
    "apply_log_ticks",
    "log_ticks",
    "png_bytes",
    "save_figure",
    "spread_overlaps",
    "widen_for_ticks",
]

#: Pixels per inch of the report's PNG figures.
DPI = 100

#: Text drawn without FreeType's hinting (matplotlib's default hints it): at this
#: resolution it looks the same, and text was two thirds of a figure's drawing time.
_TEXT_RC = {"text.hinting": "none"}

#: Labelled ticks every log axis shows at least.
MIN_LOG_TICKS = 3

#: Mantissas of the tick series, from the sparsest to the densest.
_SERIES = (
    (1.0,),
    (1.0, 2.0, 5.0),
    (1.0, 2.0, 3.0, 5.0, 7.0),
    tuple(float(m) for m in range(1, 10)),
    (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0),
)

#: Inches a tick label needs along an axis (a label such as "0.02" at 8-10 pt, with a gap).
_LABEL_INCHES = 0.5


def _series_ticks(lo: float, hi: float, mantissas: Sequence[float], step: int = 1) -> list[float]:
    """The ticks m * 10^k (k a multiple of ``step``) within [lo, hi]."""
    ticks = []
    for k in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        if k % step:
            continue
        for m in mantissas:
            value = float(f"{m * 10.0**k:.12g}")  # 3 * 10**-1 is 0.30000000000000004
            if lo * (1 - 1e-9) <= value <= hi * (1 + 1e-9):
                ticks.append(value)
    return ticks


def log_ticks(lo: float, hi: float, length_inches: float = 6.0) -> list[float]:
    """Tick values of a log axis from ``lo`` to ``hi`` (> 0): the sparsest series with at least
    four ticks whose labels fit ``length_inches`` (one per :data:`_LABEL_INCHES`), else the
    densest that fits with at least :data:`MIN_LOG_TICKS` (fewer only when even the densest series
    has fewer within the range: :func:`widen_for_ticks`)."""
    if not (0.0 < lo < hi and math.isfinite(hi)):
        raise ValueError(f"a log axis needs 0 < lo < hi, got {lo!r}, {hi!r}")
    room = max(MIN_LOG_TICKS, int(length_inches / _LABEL_INCHES))
    options = [_series_ticks(lo, hi, (1.0,), step) for step in (4, 3, 2)]
    options += [_series_ticks(lo, hi, series) for series in _SERIES]
    for wanted in (MIN_LOG_TICKS + 1, MIN_LOG_TICKS):
        fitting = [ticks for ticks in options if wanted <= len(ticks) <= room]
        if fitting:
            return min(fitting, key=len) if wanted > MIN_LOG_TICKS else max(fitting, key=len)
    enough = [ticks for ticks in options if len(ticks) >= MIN_LOG_TICKS]
    return min(enough, key=len) if enough else options[-1]


def widen_for_ticks(lo: float, hi: float) -> tuple[float, float]:
    """The range [lo, hi] widened geometrically about its centre until :func:`log_ticks` labels
    :data:`MIN_LOG_TICKS` ticks in it."""
    while len(_series_ticks(lo, hi, _SERIES[-1])) < MIN_LOG_TICKS:
        lo, hi = lo / 1.25, hi * 1.25
    return lo, hi


def apply_log_ticks(axis: Any, lo: float, hi: float, length_inches: float, widen: bool = True) -> None:
    """Sets a log ``axis`` (an ``ax.xaxis`` or ``ax.yaxis``) to [lo, hi] (``widen``: widened if
    needed for three ticks; a map keeps its cells' edges, where the densest series' 1.5 and 2.5 fill in) with
    :func:`log_ticks`' ticks labelled as plain numbers in the axis' unit (``0.02``, ``5``, ``200``,
    as the tables print them) and no minor ticks."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    if widen:
        lo, hi = widen_for_ticks(lo, hi)
    if axis.axis_name == "x":
        axis.axes.set_xlim(lo, hi)
    else:
        axis.axes.set_ylim(lo, hi)
    axis.set_major_locator(FixedLocator(log_ticks(lo, hi, length_inches)))
    axis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:g}"))
    axis.set_minor_locator(NullLocator())


def spread_overlaps(ax: Any, x: np.ndarray, y: np.ndarray, width_points: float) -> tuple[np.ndarray, bool]:
    """``x`` with the markers at (x, y) that would overlap (centres closer than ``width_points``
    on the page) spread sideways around their group's centre, a marker's width apart, in the order
    of their x; and whether any moved. The axes' limits must be final."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.size < 2:
        return x, False
    pixels = ax.transData.transform(np.column_stack([x, y]))
    width = width_points * ax.figure.dpi / 72.0
    group = np.arange(x.size)

    def root(i: int) -> int:
        while group[i] != i:
            group[i] = group[group[i]]
            i = int(group[i])
        return i

    close = np.hypot(*(pixels[:, None, :] - pixels[None, :, :]).transpose(2, 0, 1)) < width
    for i, j in zip(*np.nonzero(np.triu(close, 1)), strict=True):
        group[root(int(i))] = root(int(j))
    roots = np.array([root(i) for i in range(x.size)])
    moved = False
    out = pixels.copy()
    for r in np.unique(roots):
        members = np.nonzero(roots == r)[0]
        if members.size < 2:
            continue
        moved = True
        members = members[np.argsort(pixels[members, 0], kind="stable")]
        centre = pixels[members, 0].mean()
        out[members, 0] = centre + (np.arange(members.size) - (members.size - 1) / 2) * width
    if not moved:
        return x, False
    return ax.transData.inverted().transform(out)[:, 0], True


def _ink(rgba: np.ndarray) -> np.ndarray:
    """Where the RGBA pixels are not opaque white (one comparison of each pixel as a 32-bit word)."""
    return np.ascontiguousarray(rgba).view(np.uint32)[..., 0] != np.uint32(0xFFFFFFFF)


def _touches_border(rgba: np.ndarray) -> bool:
    """Whether anything but white lies on the outermost rows or columns of the pixels."""
    edges = (rgba[:1], rgba[-1:], rgba[:, :1], rgba[:, -1:])
    return any(bool(_ink(edge).any()) for edge in edges)


def _crop_white(rgba: np.ndarray, pad: int) -> np.ndarray:
    """The pixels within ``pad`` of anything not white."""
    ink = _ink(rgba)
    rows, cols = np.nonzero(ink.any(axis=1))[0], np.nonzero(ink.any(axis=0))[0]
    if rows.size == 0:
        return rgba
    top, bottom = max(rows[0] - pad, 0), min(rows[-1] + pad + 1, rgba.shape[0])
    left, right = max(cols[0] - pad, 0), min(cols[-1] + pad + 1, rgba.shape[1])
    return rgba[top:bottom, left:right]


def _grow_to_fit(fig: Any, renderer: Any) -> bool:
    """Enlarges the canvas of ``fig`` where its drawn artists (an outside legend, a multi-line
    label) reach beyond it, keeping every axes' size and place in inches; whether it grew."""
    box = fig.get_tightbbox(renderer)  # inches
    width, height = fig.get_size_inches()
    left, bottom = max(0.0, -box.x0), max(0.0, -box.y0)
    right, top = max(0.0, box.x1 - width), max(0.0, box.y1 - height)
    if max(left, bottom, right, top) <= 0.0:
        return False
    places = [(ax, ax.get_position()) for ax in fig.axes]  # figure fractions
    new_width, new_height = width + left + right + 0.05, height + bottom + top + 0.05
    fig.set_size_inches(new_width, new_height)
    for ax, p in places:
        ax.set_position(
            [(p.x0 * width + left) / new_width, (p.y0 * height + bottom) / new_height,
             p.width * width / new_width, p.height * height / new_height]
        )  # fmt: skip
    return True


#: Agg renderers by (width, height, dpi) in pixels, most recent last: at most this many are kept.
_RENDERERS_KEPT = 8
_renderers: dict[tuple[float, float, float], Any] = {}
#: Held from a draw until its pixels are copied: a renderer shared by two threads' figures would
#: mix their pixels.
_drawing = threading.Lock()


def _canvas(fig: Any) -> Any:
    """An Agg canvas for ``fig`` whose renderer is shared with the earlier figures of the same size
    in pixels. matplotlib measures each text once per renderer (a FreeType layout, about a
    millisecond per label): a renderer of its own for each figure measured the same algorithm
    names, axis labels and tick labels again in every experiment. The canvas clears the renderer
    before each draw, and the pixels are the same as on a renderer of its own. Its texts are
    drawn from the images :mod:`~bbrl.analysis.text_pixels` keeps."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer_agg = text_pixels.renderer_class()

    class SharedRendererCanvas(FigureCanvasAgg):
        def get_renderer(self) -> Any:
            width, height = self.figure.bbox.size
            key = (float(width), float(height), float(self.figure.dpi))
            renderer = _renderers.pop(key, None)
            if renderer is None:
                renderer = renderer_agg(width, height, self.figure.dpi)
            _renderers[key] = renderer  # the most recent last
            while len(_renderers) > _RENDERERS_KEPT:
                del _renderers[next(iter(_renderers))]
            self.renderer, self._lastKey = renderer, key
            return renderer

    return SharedRendererCanvas(fig)


def png_bytes(rgb: np.ndarray) -> bytes:
    """An 8-bit RGB image (``(height, width, 3)`` uint8) as a PNG file: every row unfiltered, the
    whole compressed at zlib's fastest level. A figure is mostly flat colour, where Pillow's choice
    of a filter per row (trying each of the five) took two thirds of the encoding time and saved
    nothing: these files are about 5% smaller and three times faster to write, the pixels the same."""
    rgb = np.asarray(rgb)
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3 or 0 in rgb.shape:
        raise ValueError(f"a PNG needs a non-empty (height, width, 3) uint8 image, got {rgb.dtype} {rgb.shape}")
    height, width, _ = rgb.shape
    rows = np.zeros((height, 1 + 3 * width), dtype=np.uint8)  # each row: filter type 0 (none), its bytes
    rows[:, 1:] = rgb.reshape(height, 3 * width)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits, truecolour, no interlace
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows.tobytes(), 1))
        + chunk(b"IEND", b"")
    )


def _draw(fig: Any, canvas: Any) -> np.ndarray:
    """Draws ``fig`` on ``canvas`` and returns its pixels (the canvas' buffer), each legend drawn
    before by an earlier figure pasted from its kept pixels instead of laid out and rendered again
    (:mod:`bbrl.analysis.legend_pixels`). The figure's legends are all visible again on return."""
    # Each outside legend on the pixel grid (moved less than half a pixel), so that one legend's
    # pixels serve every figure that shows it, wherever its layout puts it.
    moved = legend_pixels.snap_anchors(fig)
    hidden: list[Any] = []
    try:
        # A legend not kept yet is drawn alone first and kept: the figure is then drawn without
        # it, as with a kept one, so that a legend costs one rendering either way.
        found = legend_pixels.reusable(fig)
        legend_pixels.capture(fig, canvas, found)
        hidden = legend_pixels.hide_kept(found)
        canvas.draw()
        rgba = np.asarray(canvas.buffer_rgba())
        if hidden and not legend_pixels.paste(hidden, rgba):
            legend_pixels.restore(hidden)
            hidden = []
            canvas.draw()
            rgba = np.asarray(canvas.buffer_rgba())
    finally:
        legend_pixels.restore(hidden)
        legend_pixels.unsnap(moved)
    return rgba


def save_figure(fig: Any, base: Path, formats: Sequence[str] = ("png", "svg")) -> dict[str, Path]:
    """Writes ``fig`` as ``base.png`` (drawn once at :data:`DPI`, its white margin cropped) and,
    if asked, ``base.svg``, each atomically; closes the figure; returns the paths by format.

    A figure must hold all its artists inside its canvas (the report's figures reserve the room of
    their outside legends): nothing outside it is drawn."""
    import matplotlib
    import matplotlib.pyplot as plt

    unknown = set(formats) - {"png", "svg"}
    if unknown:
        raise ValueError(f"figure formats are png and svg, got {sorted(unknown)}")
    paths = {}
    if "png" in formats:
        fig.set_dpi(DPI)
        canvas = _canvas(fig)
        with _drawing, matplotlib.rc_context(_TEXT_RC):
            rgba = _draw(fig, canvas)
            # Ink on the canvas' border: something was cut off (measuring every artist's extent
            # costs as much as a draw, so it is measured only then).
            if _touches_border(rgba) and _grow_to_fit(fig, canvas.get_renderer()):
                rgba = _draw(fig, canvas)
            pixels = _crop_white(rgba, pad=int(0.08 * DPI))
            rgb = np.ascontiguousarray(pixels[..., :3])  # a copy: the renderer draws the next figure
        paths["png"] = write_atomic(base.with_suffix(".png"), png_bytes(rgb))
    if "svg" in formats:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="svg", bbox_inches="tight")
        paths["svg"] = write_atomic(base.with_suffix(".svg"), buffer.getvalue())
    plt.close(fig)
    return paths
