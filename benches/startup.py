"""CPU time of starting bbrl: ``import bbrl``, ``bbrl --version`` and ``bbrl --help``, each in a
fresh process, user + system CPU of that process (median of ``--runs``). The command line is the
installed ``bbrl`` script when there is one beside the interpreter, else ``python -m bbrl``.

    python benches/startup.py --runs 5
"""

from __future__ import annotations

import argparse
import statistics
import sys

from child_process import bbrl_command, timed

#: What is timed: a name and the command that runs it.
COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import bbrl": [sys.executable, "-c", "import bbrl"],
}


for _option in ("--version", "--help"):
    COMMANDS[f"bbrl {_option}"] = [*bbrl_command(), _option]


def cpu_seconds(command: list[str]) -> float:
    """User + system CPU seconds of one run of ``command`` (which must succeed)."""
    return timed(command)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (default 5)")
    args = parser.parse_args()
    from bbrl.protocol.schema import host_line

    print(host_line())
    print("| command | median CPU (user + sys) | min | max |")
    print("|---|---|---|---|")
    for name, command in COMMANDS.items():
        times = [cpu_seconds(command) for _ in range(args.runs)]
        print(f"| `{name}` | {statistics.median(times):.3f} s | {min(times):.3f} s | {max(times):.3f} s |")


if __name__ == "__main__":
    main()
