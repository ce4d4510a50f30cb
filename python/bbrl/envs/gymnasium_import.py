"""Gymnasium toy-text environments read from their tables ``P`` and checked against their own
``step()``: the tables only count if the simulator does what they say.

Gymnasium's ``P[s][a]`` lists ``(probability, next state, reward, terminated)`` entries, several
of which may share a next state. bbrl keeps one probability, one reward and one terminal flag per
(s, a, s'), so entries sharing a next state must agree on the reward; the states entered by
terminating entries are the terminal states, and every entry into one of them from a live state
that an episode can reach (from the start law, through live states) must terminate, and no other.
Rows of terminal states are never acted in; they become absorbing with reward 0. Rows of states no
episode reaches (Taxi's passenger at the destination with the taxi elsewhere) are kept unchecked.

The check runs ``checks`` steps from every reachable live (s, a), with the state set to s before
each step and a ``reset()`` before the first step of each state (so that whatever ``reset()``
draws, such as whether Taxi's passenger is fickle, comes into play; a reset before every step
would double the cost): every outcome must be an entry of the row with its reward and flag, and
for a row with several next states the counts must pass a chi-square test at level 1e-6. A fickle
passenger changes destination inside ``step()``: the refusal says so, naming both destinations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ALPHA", "GymnasiumTables", "tables_from_gymnasium"]

#: The level of the chi-square test of a row's step counts against its probabilities.
ALPHA = 1e-6

#: Gymnasium's Taxi landmarks, by the index its states (``decode``) give the destination.
_TAXI_LANDMARKS = ("R", "G", "Y", "B")


@dataclass(frozen=True)
class GymnasiumTables:
    """What :func:`tables_from_gymnasium` reads: the tables, the start law, the terminal flags,
    the time limit (None without a ``TimeLimit`` wrapper) and a name."""

    transitions: np.ndarray
    rewards: np.ndarray
    start: np.ndarray
    terminal: np.ndarray
    time_limit: int | None
    name: str


def _time_limit(env: Any) -> int | None:
    spec = getattr(env, "spec", None)
    steps = getattr(spec, "max_episode_steps", None)
    return int(steps) if steps is not None else None


def tables_from_gymnasium(env: Any, *, checks: int, seed: int) -> GymnasiumTables:
    """The tables of the toy-text ``env`` (wrapped or not), checked as the module says.

    Raises:
        ValueError: no tables, tables one table per (s, a, s') cannot hold, or a ``step()`` that
            disagrees with them (named).
    """
    base = getattr(env, "unwrapped", env)
    table = getattr(base, "P", None)
    if not isinstance(table, dict):
        raise ValueError(
            f"{type(base).__name__} exposes no transition tables P: only toy-text environments can be imported"
        )
    n_states, n_actions = int(base.observation_space.n), int(base.action_space.n)
    name = getattr(getattr(env, "spec", None), "id", None) or type(base).__name__
    P = np.zeros((n_states, n_actions, n_states))
    R = np.zeros((n_states, n_actions, n_states))
    ends = np.zeros((n_states, n_actions, n_states), dtype=bool)
    for s in range(n_states):
        for a in range(n_actions):
            for prob, y, reward, terminated in table[s][a]:
                if P[s, a, y] > 0 and (R[s, a, y] != reward or ends[s, a, y] != bool(terminated)):
                    raise ValueError(
                        f"{name}: P[{s}][{a}] reaches state {y} with rewards {R[s, a, y]} and {reward} (or two "
                        "termination flags); bbrl keeps one reward per (s, a, s')"
                    )
                P[s, a, y] += prob
                R[s, a, y] = reward
                ends[s, a, y] = bool(terminated)
    terminal = (ends & (P > 0)).any(axis=(0, 1))
    start = np.asarray(base.initial_state_distrib, dtype=np.float64)
    reachable = _reachable(P, start, terminal)
    # Entries into a terminal state from a reachable live state must all terminate, and no other may.
    for s in np.flatnonzero(reachable):
        for a in range(n_actions):
            for y in np.flatnonzero(P[s, a] > 0):
                if ends[s, a, y] != terminal[y]:
                    raise ValueError(
                        f"{name}: P[{s}][{a}] enters state {y} with terminated={bool(ends[s, a, y])}, but other "
                        f"entries into {y} say {bool(terminal[y])}: termination is not a property of the state"
                    )
    _check_steps(base, name, P, R, reachable, terminal, checks, seed)
    for s in np.flatnonzero(terminal):
        P[s] = 0.0
        R[s] = 0.0
        P[s, :, s] = 1.0
    return GymnasiumTables(P, R, start, terminal, _time_limit(env), str(name))


def _reachable(P: np.ndarray, start: np.ndarray, terminal: np.ndarray) -> np.ndarray:
    """The live states an episode can be in: from the start law through live states."""
    reach = (start > 0) & ~terminal
    edges = P.sum(axis=1) > 0
    while True:
        grown = reach | (edges[reach].any(axis=0) & ~terminal)
        if (grown == reach).all():
            return reach
        reach = grown


def _taxi_difference(base: Any, listed: list[int], reached: int) -> str:
    """For Taxi, what differs between the state ``step()`` reached and one ``P`` lists when it is
    the destination alone (the fickle passenger's new destination, drawn inside ``step()``), as the
    end of the refusal; empty for another environment or another difference."""
    if type(base).__name__ != "TaxiEnv" or not hasattr(base, "decode"):
        return ""
    *place, destination = base.decode(reached)
    for y in listed:
        *listed_place, listed_destination = base.decode(y)
        if listed_place == place and listed_destination != destination:
            new, old = _TAXI_LANDMARKS[destination], _TAXI_LANDMARKS[listed_destination]
            return (
                f": state {reached} is the listed {y} with another destination ({new}, not {old}): step() changed "
                "the passenger's destination (Taxi's fickle passenger)"
            )
    return ""


def _check_steps(
    base: Any,
    name: str,
    P: np.ndarray,
    R: np.ndarray,
    reachable: np.ndarray,
    terminal: np.ndarray,
    checks: int,
    seed: int,
) -> None:
    from scipy import stats  # a heavy import, needed only here

    n_actions = P.shape[1]
    base.reset(seed=seed)
    for s in np.flatnonzero(reachable):
        base.reset()
        for a in range(n_actions):
            support = np.flatnonzero(P[s, a] > 0)
            counts = dict.fromkeys(support.tolist(), 0)
            for _ in range(checks):
                base.s = int(s)
                y, reward, terminated, _, _ = base.step(a)
                if y not in counts:
                    raise ValueError(
                        f"{name}: step() from state {s} under action {a} reached state {y}, which P[{s}][{a}] does "
                        f"not list (it lists {support.tolist()}): the simulator does more than its tables say"
                        f"{_taxi_difference(base, support.tolist(), int(y))}"
                    )
                if reward != R[s, a, y] or bool(terminated) != terminal[y]:
                    raise ValueError(
                        f"{name}: step() from state {s} under action {a} to state {y} gave reward {reward}, "
                        f"terminated={bool(terminated)}; P says {R[s, a, y]}, {bool(terminal[y])}"
                    )
                counts[y] += 1
            if len(support) > 1:
                observed = np.array([counts[y] for y in support], dtype=np.float64)
                expected = P[s, a, support] * checks
                p_value = stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue
                if p_value < ALPHA:
                    raise ValueError(
                        f"{name}: step() from state {s} under action {a} gave counts {observed.tolist()} over "
                        f"{support.tolist()}, against probabilities {P[s, a, support].tolist()} (chi-square "
                        f"p = {p_value:.2e} < {ALPHA})"
                    )
