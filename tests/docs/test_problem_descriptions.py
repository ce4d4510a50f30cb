"""docs/problems.md describes the MDPs as the core builds them: Double Loop's second loop needs
action 1 in its first three states only (at the last, both actions pay 2), and the fickle Taxi's
text says that it is the destination that changes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bbrl import envs

PROBLEMS = Path(__file__).resolve().parents[2] / "docs" / "problems.md"


def _paragraph(title: str) -> str:
    text = PROBLEMS.read_text(encoding="utf-8")
    start = text.index(f"**{title}.**")
    return " ".join(text[start : text.index("\n\n", start)].split())


def test_double_loops_second_loop_as_documented() -> None:
    env = envs.make("DoubleLoop")
    P, R = env.transitions, env.rewards
    for s in (5, 6, 7):  # action 1 goes on, action 0 drops back to 0 unpaid
        assert P[s, 1, s + 1] == 1.0 and P[s, 0, 0] == 1.0 and R[s, 0, 0] == 0.0
    assert np.all(P[8, :, 0] == 1.0) and np.all(R[8, :, 0] == 2.0)  # both actions pay 2 at the last
    text = _paragraph("Double Loop")
    assert "in the first three" in text and "both actions pay 2" in text, text
    assert "each of its four states" not in text, text


def test_the_fickle_taxi_text_says_the_destination_changes() -> None:
    text = _paragraph("Taxi")
    assert "picks a new destination" in text and "new destination's draw" in text, text
    importing = " ".join(PROBLEMS.read_text(encoding="utf-8").split())
    assert "`step()` changes the passenger's destination" in importing
