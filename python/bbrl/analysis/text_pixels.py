"""Texts rasterized once and reused by the report's PNG figures.

matplotlib 3.11's Agg renderer places and renders every glyph of a text on its own, in Python, to a
64th of a pixel: about a millisecond for a ten-letter label, a fifth of a figure's drawing time. The
report's figures repeat their texts (the tick labels 1, 10, 100, the axis labels, the algorithms'
names in every experiment), so :class:`TextCachingRenderer` draws a text as matplotlib 3.10 and
earlier did, the whole string rasterized by FreeType into one grey image placed on whole pixels,
and keeps that image: the same string in the same font, size, resolution and hinting is then
only composited (about 30 µs). The placement on whole pixels is the renderer's text metrics' own
(each text's extent is measured on the whole string), and a figure's pixels are the same however
many times its texts were drawn before.

Math text, texts with font features or a language set, and a matplotlib whose font objects lack
the whole-string calls are drawn by matplotlib's own renderer.

The renderer also gives matplotlib each font's line height (through the renderer hook matplotlib
asks for it), read from the font's tables once per font, size and resolution instead of at every
layout of every text: the same numbers, so the same pixels.
"""

from __future__ import annotations

import functools
import math
from typing import Any

__all__ = ["TextImage", "renderer_class"]

#: Distinct texts kept (the oldest are forgotten first); a tick label's image is about 1 KiB.
_KEPT = 4096
#: The FreeType calls of the whole-string drawing (matplotlib's FT2Font).
_WHOLE_STRING_CALLS = ("set_text", "draw_glyphs_to_bitmap", "get_bitmap_offset", "get_descent", "get_image")


class TextImage:
    """A text's grey image (uint8 rows, top first) and where it lies from the text's anchor:
    ``left`` and ``top`` the offset of its bitmap, ``descent`` the font's descent (pixels)."""

    __slots__ = ("descent", "image", "left", "top")

    def __init__(self, image: Any, left: float, top: float, descent: float) -> None:
        self.image, self.left, self.top, self.descent = image, left, top, descent


_kept: dict[tuple[Any, ...], TextImage] = {}
#: The line heights of each font (ascent, descent, line gap in pixels), by its files, size and dpi
#: (a report uses a few fonts at a few sizes).
_heights: dict[tuple[Any, ...], tuple[float, float, float] | tuple[None, None, None]] = {}


def _rasterize(font: Any, text: str, flags: Any, antialiased: bool) -> TextImage:
    font.set_text(text, 0.0, flags=flags)  # unrotated: the image is turned when composited
    font.draw_glyphs_to_bitmap(antialiased=antialiased)
    left, top = font.get_bitmap_offset()  # 26.6 fixed point, like the descent
    # A copy: the font's own buffer is reused by its next text. (Agg takes a writeable array only;
    # nothing writes to it.)
    image = font.get_image().copy()
    return TextImage(image, left / 64.0, top / 64.0, font.get_descent() / 64.0)


def _line_height(font: Any, size: float, dpi: float) -> tuple[float, float, float] | tuple[None, None, None]:
    """A font's ascent, descent and gap between lines (pixels at ``size`` points and ``dpi``) from
    its OS/2 table, else its horizontal header, as matplotlib reads them; (None, None, None) when
    it has neither (matplotlib then measures the font itself)."""
    for table_name, gap, ascent, descent in (
        ("OS/2", "sTypoLineGap", "sTypoAscender", "sTypoDescender"),
        ("hhea", "lineGap", "ascent", "descent"),
    ):
        table = font.get_sfnt_table(table_name)
        if table is not None:
            scale = 1 / font.get_sfnt_table("head")["unitsPerEm"] * size * dpi / 72  # matplotlib's order
            return table[ascent] * scale, -table[descent] * scale, table[gap] * scale
    return None, None, None


@functools.cache
def renderer_class() -> type:
    """The Agg renderer whose :meth:`draw_text` reuses :class:`TextImage` s (built on first use, so
    that importing this module does not import matplotlib)."""
    import matplotlib
    from matplotlib.backends.backend_agg import RendererAgg, get_hinting_flag
    from matplotlib.font_manager import fontManager, get_font
    from matplotlib.ft2font import FT2Font

    def font_files(prop: Any) -> tuple[str, ...]:
        """The font files matplotlib draws ``prop`` with (the first, then its fallbacks): with the
        size, what sets a font's glyphs and metrics (its own cache of fonts is keyed so too)."""
        return tuple(fontManager._find_fonts_by_props(prop))

    class TextCachingRenderer(RendererAgg):
        def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
            plain = not ismath and (
                mtext is None
                or (getattr(mtext, "get_fontfeatures", lambda: None)() is None
                    and getattr(mtext, "get_language", lambda: None)() is None)
            )  # fmt: skip
            if not plain or not all(hasattr(FT2Font, name) for name in _WHOLE_STRING_CALLS):
                return super().draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)
            flags = get_hinting_flag()
            antialiased = bool(gc.get_antialiased())
            # The font's files (which the rc settings choose), its size in pixels and its hinting set
            # the image; the font is prepared only to draw a text not kept yet.
            hinting_factor = matplotlib.rcParams["text.hinting_factor"]
            key = (s, font_files(prop), prop.get_size_in_points(), self.dpi, flags, hinting_factor, antialiased)
            text = _kept.get(key)
            if text is None:
                text = _kept[key] = _rasterize(self._prepare_font(prop), s, flags, antialiased)
                while len(_kept) > _KEPT:
                    del _kept[next(iter(_kept))]
            # The anchor is the start of the text's baseline; the image's bottom left corner, which
            # Agg turns the image about, lies the bitmap's offset along the text and the descent
            # (and the image's row of margin) across it, both turned with the text.
            turn = math.radians(angle)
            along, across = text.left, text.top + text.descent + 1.0
            column = round(x + along * math.cos(turn) + across * math.sin(turn))
            row = round(y - along * math.sin(turn) + across * math.cos(turn))
            self._renderer.draw_text_image(text.image, column, row, angle, gc)
            return None

        def _get_font_height_metrics(self, prop):
            # matplotlib lays out every text with its font's line height, which it reads from the
            # font's tables each time unless the renderer gives it (a hook of its own); the same
            # numbers, read once per font, size and resolution (a tenth of a figure's layout).
            files, size = font_files(prop), prop.get_size_in_points()
            found = _heights.get((files, size, self.dpi))
            if found is None:
                found = _heights[files, size, self.dpi] = _line_height(get_font(files), size, self.dpi)
            return found

    return TextCachingRenderer
