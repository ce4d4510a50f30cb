"""Legends drawn once and reused as pixels by the report's PNG figures.

The report's figures repeat their legends: the online and offline score figures of every
experiment list the same algorithms with the same markers, and so do the distribution figures.
An outside legend of twenty entries costs matplotlib as much to lay out and render as the rest of
its figure (about 65 ms), so :func:`save_figure` draws each distinct legend once, keeps its pixels
here, and pastes them into the next figure whose legend is the same, drawn without it.

A legend is the same when everything that sets its pixels is: its texts and their font sizes,
its title, each entry's handle (its kind, and the colours, marker, line and hatch it is drawn
with), its frame and its layout parameters, at the same resolution and with the same text
settings (:func:`legend_key`; a legend whose handles are of another kind is always drawn). It is
placed where matplotlib would place it: only legends anchored by their upper left corner to a
point (``loc="upper left"`` with a point ``bbox_to_anchor``, the report's outside legends) are
reused, their offset from that point kept with the pixels, and only where the point falls on the
same fraction of a pixel as where the legend was drawn, so that a figure's pixels are the same as
when it draws its legend itself. :func:`save_figure` puts each such point on the corner of a pixel
for the draw (:func:`snap_anchors`, a move of less than half a pixel), so that a legend is reused
whatever the width of the figures that show it. Pixels are pasted only where the figure drawn
without its legend is white there (nothing else under the legend), else the figure is drawn again
with its legend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "LegendPixels",
    "capture",
    "hide_kept",
    "legend_key",
    "paste",
    "restore",
    "reusable",
    "snap_anchors",
    "unsnap",
]

#: Distinct legends kept (the oldest are forgotten first).
_KEPT = 32
#: The pixels of each legend drawn so far, by :func:`legend_key`.
_kept: dict[tuple[Any, ...], LegendPixels] = {}
#: Pixels kept around a legend's extent.
_MARGIN = 3
#: matplotlib's code of ``loc="upper left"``.
_UPPER_LEFT = 2


@dataclass(frozen=True)
class LegendPixels:
    """A legend's pixels (RGBA rows, top first) and where their top left corner lies from the
    pixel of the legend's anchor point, in whole pixels (columns right, rows down)."""

    rgba: np.ndarray
    column_offset: int
    row_offset: int


def _rgba(colour: Any) -> tuple[float, ...]:
    from matplotlib.colors import to_rgba

    return tuple(float(c) for c in to_rgba(colour))


#: What sets the pixels of each kind of legend handle this knows, by matplotlib class name: the
#: values of the handle's ``get_<name>`` (with its alpha, visibility and z-order).
_HANDLE_PROPERTIES = {
    "Line2D": (
        "marker", "markersize", "markerfacecolor", "markeredgecolor", "markeredgewidth", "fillstyle", "color",
        "linestyle", "linewidth", "drawstyle", "xdata", "ydata",
    ),
    "Rectangle": ("facecolor", "edgecolor", "hatch", "linewidth", "linestyle", "x", "y", "width", "height"),
}  # fmt: skip


def _comparable(name: str, value: Any) -> Any:
    """A handle property's value as a key compares it: colours as RGBA, data as tuples, marker
    and line style by their names."""
    if name.endswith("color"):
        return _rgba(value)
    if name in ("xdata", "ydata"):
        return tuple(np.asarray(value, dtype=float).tolist())
    if name in ("marker", "linestyle"):
        return str(value)
    return value


def _handle_key(handle: Any) -> tuple[Any, ...] | None:
    """What sets a legend handle's pixels, or None for a kind of handle this does not know."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    kind = type(handle)
    if kind not in (Line2D, Rectangle):  # exactly these classes: a subclass may draw otherwise
        return None
    names = _HANDLE_PROPERTIES[kind.__name__]
    common = (handle.get_alpha(), handle.get_visible(), handle.get_zorder())
    return (kind.__name__, *common, *(_comparable(n, getattr(handle, f"get_{n}")()) for n in names))


def _text_key(text: Any) -> tuple[Any, ...]:
    props = text.get_fontproperties()
    return (
        text.get_text(),
        text.get_fontsize(),
        _rgba(text.get_color()),
        str(props.get_family()),
        props.get_weight(),
        props.get_style(),
        text.get_linespacing(),
        text.get_visible(),
    )


def _anchor(legend: Any) -> tuple[float, float] | None:
    """The legend's anchor point in pixels (column, row from the top of the canvas, whose rows are
    the figure's height in pixels, whole), when it is anchored by its upper left corner to a
    point; else None."""
    if legend._loc != _UPPER_LEFT:
        return None
    box = legend.get_bbox_to_anchor()
    if box.width != 0 or box.height != 0:
        return None
    return float(box.x0), float(int(legend.figure.bbox.height) - box.y1)


def snap_anchors(figure: Any) -> list[tuple[Any, Any]]:
    """Moves the anchor of each legend of ``figure`` anchored by its upper left corner to a point
    onto the nearest corner of a pixel (less than half a pixel each way), so that the same legend
    is reused wherever a figure's layout puts it; returns each legend moved with its anchor before,
    for :func:`unsnap`. The anchor is then in pixels: the figure must not be resized before."""
    from matplotlib.transforms import IdentityTransform

    moved = []
    for ax in figure.axes:
        legend = ax.get_legend()
        try:
            anchor = None if legend is None else _anchor(legend)
            before = None if anchor is None else legend._bbox_to_anchor
        except AttributeError:  # a matplotlib whose legends lack what this reads: left alone
            continue
        if anchor is None:
            continue
        rows = int(legend.figure.bbox.height)
        legend.set_bbox_to_anchor((round(anchor[0]), rows - round(anchor[1])), transform=IdentityTransform())
        moved.append((legend, before))
    return moved


def unsnap(moved: list[tuple[Any, Any]]) -> None:
    """Gives the legends :func:`snap_anchors` moved their anchors back."""
    for legend, before in moved:
        # As it was stored (set_bbox_to_anchor would transform a stored box a second time).
        legend._bbox_to_anchor = before
        legend.stale = True


def legend_key(legend: Any) -> tuple[Any, ...] | None:
    """Everything that sets a legend's pixels (None: a legend that is always drawn), its anchor's
    fraction of a pixel included: FreeType places glyphs to a 64th of a pixel, so a legend is
    reused only where it falls on the pixel grid exactly as where it was drawn. A matplotlib whose
    legends lack an attribute read here has its legends drawn each time."""
    try:
        return _key(legend)
    except AttributeError:
        return None


def _key(legend: Any) -> tuple[Any, ...] | None:
    import matplotlib

    anchor = _anchor(legend)
    if anchor is None or not legend.get_visible():
        return None
    phase = (anchor[0] - math.floor(anchor[0]), anchor[1] - math.floor(anchor[1]))
    handles = tuple(_handle_key(h) for h in legend.legend_handles)
    if any(h is None for h in handles):
        return None
    frame = legend.get_frame()
    layout = (
        legend._ncols, legend.borderpad, legend.labelspacing, legend.handlelength, legend.handleheight,
        legend.handletextpad, legend.borderaxespad, legend.columnspacing, legend.markerscale, legend.numpoints,
        legend._fontsize, legend.get_frame_on(), legend.get_alignment(),
    )  # fmt: skip
    settings = tuple(
        str(matplotlib.rcParams[name])
        for name in ("text.hinting", "text.hinting_factor", "text.antialiased", "hatch.color", "hatch.linewidth")
    )
    return (
        tuple(_text_key(t) for t in legend.get_texts()),
        _text_key(legend.get_title()),
        handles,
        (_rgba(frame.get_facecolor()), _rgba(frame.get_edgecolor()), frame.get_linewidth(), frame.get_alpha()),
        layout,
        legend.figure.dpi,
        settings,
        phase,
    )


def reusable(figure: Any) -> list[tuple[Any, tuple[Any, ...]]]:
    """The legends of ``figure`` that can be reused as pixels, each with its :func:`legend_key`
    (computed once per draw, for :func:`capture` and :func:`hide_kept` alike)."""
    found = []
    for ax in figure.axes:
        legend = ax.get_legend()
        key = None if legend is None else legend_key(legend)
        if key is not None:
            found.append((legend, key))
    return found


def hide_kept(found: list[tuple[Any, tuple[Any, ...]]]) -> list[tuple[Any, LegendPixels]]:
    """Hides the legends of :func:`reusable` whose pixels are kept, and returns them with their
    pixels, to be drawn back by :func:`paste` (or shown again by :func:`restore`)."""
    hidden = []
    for legend, key in found:
        if key in _kept:
            legend.set_visible(False)
            hidden.append((legend, _kept[key]))
    return hidden


def restore(hidden: list[tuple[Any, LegendPixels]]) -> None:
    """Shows again the legends :func:`hide_kept` hid."""
    for legend, _ in hidden:
        legend.set_visible(True)


def paste(hidden: list[tuple[Any, LegendPixels]], rgba: np.ndarray) -> bool:
    """Pastes the hidden legends' pixels into the drawn ``rgba`` (the canvas' buffer, written in
    place) where each legend would be drawn; False, with nothing pasted, when one of them would fall
    outside the canvas or on anything but white (then the figure must be drawn with its legends)."""
    places = []
    for legend, pixels in hidden:
        anchor = _anchor(legend)
        if anchor is None:
            return False
        top = math.floor(anchor[1]) + pixels.row_offset
        left = math.floor(anchor[0]) + pixels.column_offset
        rows, columns = pixels.rgba.shape[:2]
        if top < 0 or left < 0 or top + rows > rgba.shape[0] or left + columns > rgba.shape[1]:
            return False
        under = np.ascontiguousarray(rgba[top : top + rows, left : left + columns]).view(np.uint32)
        if (under != np.uint32(0xFFFFFFFF)).any():  # not all opaque white: something lies there
            return False
        places.append((top, left, pixels.rgba))
    for top, left, block in places:
        rgba[top : top + block.shape[0], left : left + block.shape[1]] = block
    return True


def capture(figure: Any, canvas: Any, found: list[tuple[Any, tuple[Any, ...]]]) -> None:
    """Keeps the pixels of each legend of :func:`reusable` not kept yet, drawn alone: the
    figure's other artists are hidden for one draw of the legends over the white background, then
    shown again (the caller draws the figure itself next, the legends pasted by :func:`paste`)."""
    wanted = [(legend, key) for legend, key in found if key not in _kept]
    if not wanted:
        return
    shown: list[Any] = []
    legends = {id(legend) for legend, _ in wanted}
    for ax in figure.axes:
        for child in ax.get_children():
            if id(child) not in legends and child.get_visible():
                child.set_visible(False)
                shown.append(child)
    for child in [*figure.texts, *figure.legends, *figure.images, *figure.lines, *figure.patches]:
        if child.get_visible():
            child.set_visible(False)
            shown.append(child)
    try:
        canvas.draw()
        renderer = canvas.get_renderer()
        rgba = np.asarray(canvas.buffer_rgba())
        height = rgba.shape[0]
        for legend, key in wanted:
            box = legend.get_window_extent(renderer)
            # A margin for the frame's antialiased edge, which reaches past the legend's extent.
            top, bottom = math.floor(height - box.y1) - _MARGIN, math.ceil(height - box.y0) + _MARGIN
            left, right = math.floor(box.x0) - _MARGIN, math.ceil(box.x1) + _MARGIN
            if top < 0 or left < 0 or bottom > rgba.shape[0] or right > rgba.shape[1]:
                continue  # cut by the canvas: drawn each time
            anchor = _anchor(legend)
            assert anchor is not None  # a key is made only for an anchored legend
            block = rgba[top:bottom, left:right].copy()
            block.flags.writeable = False
            _kept[key] = LegendPixels(block, left - math.floor(anchor[0]), top - math.floor(anchor[1]))
            while len(_kept) > _KEPT:
                del _kept[next(iter(_kept))]
    finally:
        for child in shown:
            child.set_visible(True)
