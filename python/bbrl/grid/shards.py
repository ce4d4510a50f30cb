"""Sharding a grid over several runners: shard K of N runs cells K-1, K-1+N, K-1+2N, ..."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .model import Cell

__all__ = ["parse_shard", "select_shard"]


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` (1 <= K <= N) to ``(K, N)``: shard K runs cells K-1, K-1+N, K-1+2N, ... of the grid."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match:
        raise ValueError(f"--shard expects K/N such as 1/4, got {text!r}")
    k, n = int(match.group(1)), int(match.group(2))
    if not 1 <= k <= n:
        raise ValueError(f"--shard K/N needs 1 <= K <= N, got {text!r}")
    return k, n


def select_shard(cells: Sequence[Cell], shard: tuple[int, int] | None) -> list[Cell]:
    """The cells of shard ``(K, N)``: those whose index is K-1 modulo N (every cell for ``None``)."""
    if shard is None:
        return list(cells)
    k, n = shard
    return [c for c in cells if c.index % n == k - 1]
