"""The installed package's version, read once (the root ``bbrl`` and every writer that records it use it)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("bbrl-bench")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
    from ._core import __version__

__all__ = ["__version__"]
