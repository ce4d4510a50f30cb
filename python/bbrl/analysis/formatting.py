"""Durations as text, stated once: the terminal tables, the Markdown, HTML and LaTeX tables and the report."""

from __future__ import annotations

import math

__all__ = ["duration_parts", "duration_unit", "format_duration", "latex_duration"]


_UNITS = (("d", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


def duration_unit(seconds: float) -> tuple[str, float]:
    """(unit, its length in seconds): the largest unit among d, h, min, s, ms, µs, ns that fits the
    duration (ns below 1 ns). The figures' axes take their unit from it, as the tables do."""
    for unit, size in _UNITS[:-1]:
        if seconds >= size:
            return unit, size
    return _UNITS[-1]


def duration_parts(seconds: float) -> tuple[str, str]:
    """(number, unit) of a duration in its largest fitting unit among d, h, min, s, ms, µs, ns."""
    unit, size = duration_unit(seconds)
    return f"{seconds / size:.3g}", unit


def format_duration(seconds: float, resolution: float = 0.0) -> str:
    """A duration in its largest fitting unit among d, h, min, s, ms, µs, ns; "-" if unknown,
    "0" for a time zero by declaration, "< r" below the clock's resolution ``r`` (not a number)."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    if seconds == 0.0:
        return "0"
    if resolution and seconds < resolution:
        return "< " + format_duration(resolution)
    number, unit = duration_parts(seconds)
    return f"{number} {unit}"


def latex_duration(seconds: float, resolution: float = 0.0) -> str:
    """A duration for LaTeX: a thin space between number and unit, µ as ``\\textmu``."""
    if seconds is None or not math.isfinite(seconds):
        return "--"
    if seconds == 0.0:
        return "0"
    if resolution and seconds < resolution:
        return "$<$ " + latex_duration(resolution)
    number, unit = duration_parts(seconds)
    unit = unit.replace("µ", r"\textmu{}")
    return number + r"\," + unit
