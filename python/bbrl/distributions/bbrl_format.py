"""Reader of the original BBRL text serialisation of distributions (SPEC 1.1).

A file is a chain of sections ``<class name>`` / ``<parameter count>`` / fields. Distribution
blocks are stored action-major in the file ("for u: for x: one line of nX values") and
state-major in memory, which is what this reader returns: arrays of shape (S, A, S).
The file may be plain text or one zlib stream of that text (``*.zz``). The text may be at most
:data:`MAX_TEXT_BYTES` long, compressed or not: a compressed file is inflated only up to that size
(a few kilobytes of zlib can inflate to gigabytes), and a header's sizes are checked against the
lines present before any table is allocated.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

#: The largest distribution text read (bytes, after inflating): the original files are at most tens
#: of kilobytes (the Grid distribution, 25 states, is 10 kB); a distribution of 1000 states and 10
#: actions takes about 100 MB of text.
MAX_TEXT_BYTES = 256 * 2**20


@dataclass(frozen=True)
class BBRLDistribution:
    long_name: str
    short_name: str
    theta: np.ndarray
    rewards: np.ndarray
    initial_state: int | None


class _Lines:
    """A cursor over the non-empty lines of a file, with errors that name the line."""

    def __init__(self, text: str, source: str) -> None:
        self.lines = text.splitlines()
        self.pos = 0
        self.source = source

    def error(self, message: str) -> ValueError:
        return ValueError(f"{self.source}: line {self.pos}: {message}")

    def next(self, what: str) -> str:
        if self.pos >= len(self.lines):
            raise ValueError(f"{self.source}: file is truncated: expected {what} at line {self.pos + 1}")
        line = self.lines[self.pos].strip()
        self.pos += 1
        return line

    def expect(self, value: str) -> None:
        line = self.next(repr(value))
        if line != value:
            raise self.error(f"expected {value!r}, found {line[:60]!r}: not a BBRL distribution file")

    def integer(self, what: str) -> int:
        line = self.next(what)
        try:
            return int(line)
        except ValueError:
            raise self.error(f"expected an integer ({what}), found {line[:60]!r}") from None

    def row(self, width: int, what: str) -> list[float]:
        line = self.next(what)
        try:
            values = [float(v) for v in line.split()]
        except ValueError:
            raise self.error(f"expected {width} numbers ({what}), found {line[:60]!r}") from None
        if len(values) != width:
            raise self.error(f"expected {width} numbers ({what}), found {len(values)}")
        return values


def decode(data: bytes, source: str = "distribution file") -> str:
    """The text of a BBRL file: zlib-inflated when it is compressed, as the original reader does,
    up to :data:`MAX_TEXT_BYTES` (beyond it, a ValueError naming ``source``)."""
    if len(data) > MAX_TEXT_BYTES:
        raise ValueError(f"{source}: larger than {MAX_TEXT_BYTES >> 20} MiB: not a distribution file")
    inflater = zlib.decompressobj()
    try:
        text = inflater.decompress(data, MAX_TEXT_BYTES)
    except zlib.error:
        text = data  # not compressed: the text itself
    else:
        if inflater.unconsumed_tail:
            raise ValueError(
                f"{source}: inflates to more than {MAX_TEXT_BYTES >> 20} MiB: not a distribution file (refused "
                "without inflating it further)"
            )
        if not inflater.eof:
            raise ValueError(f"{source}: the compressed stream is truncated")
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{source}: neither UTF-8 text (byte {exc.start}) nor a zlib-compressed one") from None


def _block(cursor: _Lines, n_states: int, n_actions: int, what: str) -> np.ndarray:
    table = np.empty((n_states, n_actions, n_states))
    for u in range(n_actions):
        for x in range(n_states):
            table[x, u, :] = cursor.row(n_states, f"{what}(x={x}, u={u}, ·)")
    return table


def parse(text: str, source: str) -> BBRLDistribution:
    """Parses a ``DirMultiDistribution`` serialisation; raises ``ValueError`` naming the line."""
    cursor = _Lines(text, source)
    cursor.expect("Serializable")
    cursor.expect("0")
    cursor.expect("IMDPDistribution")
    cursor.expect("2")
    long_name = cursor.next("the distribution's name")
    short_name = cursor.next("the distribution's short name")
    cursor.expect("MDPDistribution")
    cursor.expect("0")
    cursor.expect("DirMultiDistribution")
    count = cursor.integer("the parameter count")
    n_states = cursor.integer("nX")
    n_actions = cursor.integer("nU")
    if n_states < 1 or n_actions < 1:
        raise cursor.error(f"nX and nU must be >= 1, got {n_states} and {n_actions}")
    # Two tables of nX * nU lines follow: sizes the file cannot hold are refused before allocating.
    if 2 * n_states * n_actions > len(cursor.lines) - cursor.pos:
        raise cursor.error(
            f"nX = {n_states} and nU = {n_actions} announce {2 * n_states * n_actions} table lines, more than the "
            "file has: truncated or damaged"
        )
    initial = cursor.integer("iniState")
    theta = _block(cursor, n_states, n_actions, "theta")
    reward_type = cursor.integer("rType")
    if reward_type != 0:
        raise cursor.error(f"reward type {reward_type} (Gaussian rewards) is not supported; only 0 (constant)")
    rewards = _block(cursor, n_states, n_actions, "R")
    has_variances = cursor.integer("hasV")
    size = n_states * n_actions * n_states
    if has_variances:
        _block(cursor, n_states, n_actions, "V")  # variances of Gaussian rewards; unused with constant rewards
    expected = 3 + size + 1 + size + 1 + (size if has_variances else 0)
    if count != expected:
        raise ValueError(f"{source}: parameter count {count} does not match nX={n_states}, nU={n_actions} ({expected})")
    return BBRLDistribution(long_name, short_name, theta, rewards, None if initial == -1 else initial)
