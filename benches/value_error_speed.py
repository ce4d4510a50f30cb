"""Returns per second of the value-error rollout sampler (Mountain Car, Puddle World).

Prints the CPU model and its vector extensions, then times (a) one thread sampling truncated
returns from one state (`bbrl.value_error.sample_returns`) and (b) reference values over many
states on every core (`reference_values`), reporting returns and environment steps per second.

    python benches/value_error_speed.py
"""

from __future__ import annotations

import time

import numpy as np

from bbrl import value_error as ve
from bbrl.protocol.schema import host_line


def main() -> None:
    print(host_line())
    cases = [
        ("mountain-car", (-0.5, 0.0), 20_000, 1000),
        ("puddle-world", (0.5, 0.5), 2_000, 1194),
    ]
    for name, state, n, length in cases:
        env, policy = ve.paper_setup(name)
        ve.sample_returns(env, policy, state, 100, length)  # warm-up
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            _, steps = ve.sample_returns(env, policy, state, n, length, seed=1)
            best = min(best, time.perf_counter() - start)
        print(
            f"{name:13s} one thread from {state}: {n / best:12,.0f} returns/s, {steps / best / 1e6:6.1f} M steps/s "
            f"({steps / n:.0f} steps per return)"
        )
    for name, m, eps in [("mountain-car", 64, 0.1), ("puddle-world", 8, 0.2)]:
        env, policy = ve.paper_setup(name)
        states = env.uniform_states(m, 0)
        start = time.perf_counter()
        out = ve.state_values(env, policy, states, epsilon=eps, delta=0.1)
        seconds = time.perf_counter() - start
        returns, steps = int(out.n_samples.sum()), int(out.n_steps.sum())
        print(
            f"{name:13s} Algorithm 2 at {m} states, epsilon {eps}, all cores: {returns / seconds:12,.0f} returns/s, "
            f"{steps / seconds / 1e6:6.1f} M steps/s; median {int(np.median(out.n_samples))} returns per state, "
            f"{seconds:.1f} s"
        )


if __name__ == "__main__":
    main()
