"""Replay evaluators' throughput: logged tuples consumed per second on one core.

    python benches/replay_speed.py [--transitions 1000000] [--repeats 3] [--psrl-episodes 20000]

Writes two logs of about ``--transitions`` transitions with uniform logging: SixArms (episodes end
on the return to the hub, 2.07 steps on average) and RiverSwim (Osband, 20-step episodes). Times
one evaluation on one worker thread (``threads=1``), best of ``--repeats``: Queue and PSRS with the
Random agent (the evaluator's own cost: bucketing and shuffling the log, the rejection draws, the
agent calls through the stepping handle), and on RiverSwim with PSRL (k = 10: a posterior draw and
10 model solves per episode, which dominate), stopped after ``--psrl-episodes`` episodes. A plain
Python PSRS loop over the SixArms log with a uniform candidate (no agent at all) gives the
reference figure. Prints the CPU model and its vector extensions first.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from bbrl import agents, replay
from bbrl.protocol.schema import host_line


def timed(repeats: int, run):
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def python_psrs(data: replay.Dataset, seed: int) -> tuple[int, int]:
    """PSRS in plain Python with a uniform candidate: per-state streams, check before pop."""
    frame = data.to_polars()
    rng = random.Random(seed)
    states, actions = frame["state"].to_list(), frame["action"].to_list()
    next_states = frame["next_state"].to_list()
    table = data.logging_policy
    n_actions = data.n_actions
    streams: dict[int, list[int]] = {}
    for row, s in enumerate(states):
        streams.setdefault(s, []).append(row)
    for rows in streams.values():
        rng.shuffle(rows)
    cursor = dict.fromkeys(streams, 0)
    candidate = [1.0 / n_actions] * n_actions
    pops = episodes = 0
    state = data.start_state
    while True:
        pe = table[state]
        m = max(b / e for b, e in zip(candidate, pe, strict=True) if b > 0)
        rows = streams.get(state, [])
        while True:
            if cursor.get(state, 0) == len(rows):
                return pops, episodes
            row = rows[cursor[state]]
            cursor[state] += 1
            pops += 1
            a = actions[row]
            if rng.random() * m * pe[a] < candidate[a]:
                break
        state = next_states[row]
        if state == data.start_state:
            episodes += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transitions", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--psrl-episodes", type=int, default=20_000)
    args = parser.parse_args()
    print(host_line())
    # Uniform logging on SixArms: 2.068 steps per episode on average.
    start = time.perf_counter()
    data = replay.Dataset.collect("SixArms", np.full((7, 6), 1 / 6), int(args.transitions / 2.068), seed=0)
    print(f"SixArms log: {data.n_rows} transitions, {data.n_episodes} episodes ({time.perf_counter() - start:.2f} s)")
    river = replay.Dataset.collect(
        "RiverSwim-Osband", np.full((6, 2), 0.5), args.transitions // 20, seed=0, episode_end=20, discount=1.0
    )
    print(f"RiverSwim log: {river.n_rows} transitions, {river.n_episodes} episodes")
    print(f"{'evaluator':<40}{'tuples':>10}{'episodes':>10}{'seconds':>10}{'tuples/s':>14}")

    def row(name: str, seconds: float, tuples: int, episodes: int) -> None:
        print(f"{name:<40}{tuples:>10}{episodes:>10}{seconds:>10.3f}{tuples / seconds:>14,.0f}")

    for log, name, end in ((data, "SixArms", "start"), (river, "RiverSwim", 20)):
        random_agent = agents.Random().train(log.uniform_prior(), gamma=0.95)
        for method in ("queue", "psrs"):
            seconds, result = timed(
                args.repeats,
                lambda m=method, a=random_agent, d=log, e=end: replay.evaluate(
                    a, d, m, threads=1, runs=1, episode_end=e
                )[0],
            )
            row(f"{name} {method}, Random (Rust)", seconds, result.tuples_used, result.n_episodes)
    psrl = agents.PSRL(k=10).train(river.uniform_prior(), gamma=0.95)
    for method in ("queue", "psrs"):
        seconds, result = timed(
            1,
            lambda m=method: replay.evaluate(
                psrl, river, m, threads=1, runs=1, episode_end=20, max_episodes=args.psrl_episodes
            )[0],
        )
        row(f"RiverSwim {method}, PSRL k=10 (Rust)", seconds, result.tuples_used, result.n_episodes)
    seconds, (pops, episodes) = timed(1, lambda: python_psrs(data, 0))
    row("SixArms psrs, uniform (plain Python)", seconds, pops, episodes)


if __name__ == "__main__":
    main()
