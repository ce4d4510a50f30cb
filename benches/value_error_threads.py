"""Thread scaling of certified references: ``reference_values`` on 1 and 2 threads.

Prints the machine and its load, then for Mountain Car (64 states, epsilon 0.05) and Puddle World
(8 states, epsilon 0.2) the median wall and CPU time of 3 runs per thread count, and checks that
the values do not depend on the thread count. On a shared machine the CPU time tells whether the
second thread found a free core (CPU time near twice the wall time) or not.

    python benches/value_error_threads.py
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np

from bbrl import value_error as ve
from bbrl.protocol.schema import host_line

CASES = [("mountain-car", 64, 0.05), ("puddle-world", 8, 0.2)]


def main() -> None:
    print(host_line())
    print(f"load average before: {os.getloadavg()}")
    for name, m, epsilon in CASES:
        env, policy = ve.paper_setup(name)
        states = env.uniform_states(m, 0)
        values = None
        for threads in (1, 2):
            wall, cpu = [], []
            for _ in range(3):
                start, start_cpu = time.perf_counter(), time.process_time()
                refs = ve.reference_values(env, policy, states, epsilon=epsilon, delta=0.1, threads=threads)
                wall.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
                values = refs.values if values is None else values
                assert np.array_equal(values, refs.values), "the values depend on the thread count"
            steps = int(refs.n_steps.sum())
            print(
                f"{name:13s} {m} states, epsilon {epsilon}, {threads} thread(s): {steps:.3g} steps, wall median "
                f"{statistics.median(wall):.2f} s, CPU median {statistics.median(cpu):.2f} s, "
                f"{steps / statistics.median(wall) / 1e6:.1f} M steps/s"
            )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
