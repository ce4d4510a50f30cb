"""The grid configurations shipped with the package (the same files as the checkout's examples/)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["SHIPPED_CONFIGS", "config_path", "shipped_config"]

#: The configurations shipped with the package.
SHIPPED_CONFIGS = ("quick", "paper-accurate", "paper-inaccurate", "problems")


def shipped_config(name: str) -> Path | None:
    """The installed copy of a shipped configuration (``quick``, ``paper-accurate``, ``problems``,
    ``paper-inaccurate``, with or without ``.toml``), or ``None``."""
    stem = name[:-5] if name.endswith(".toml") else name
    if stem not in SHIPPED_CONFIGS:
        return None
    path = Path(str(resources.files("bbrl") / "data" / "configs" / f"{stem}.toml"))
    return path if path.is_file() else None


def config_path(value: Path) -> Path:
    """A configuration given on the command line: the file if it exists, else the shipped
    configuration of that name, else the path as given (its reader then says it is missing)."""
    if value.is_file():
        return value
    shipped = shipped_config(str(value))
    return shipped if shipped is not None else value
