"""The tables of benches/README.md from pytest-benchmark results.

    pytest benches --benchmark-json bench-1.json     # three times (bench-2, bench-3)
    python benches/tables.py bench-1.json bench-2.json bench-3.json

Each figure is the median over the files of the rate the benchmark stored in ``extra_info`` (cost
per decision, tuples, returns or steps per second) and each file's machine line is printed, so a
table says where it comes from. The metrics come from the benchmarks themselves: nothing here
restates a size or a setting.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from bbrl.analysis.formatting import format_duration

PROBLEMS = ("GC", "GDL", "Grid")


def load(paths: list[Path]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """(the machine lines, {benchmark full name: its extra_info with every metric a list over files})."""
    hosts: list[str] = []
    merged: dict[str, dict[str, Any]] = defaultdict(dict)
    for path in paths:
        document = json.loads(path.read_text(encoding="utf-8"))
        for bench in document["benchmarks"]:
            info = bench["extra_info"]
            if info.get("host") and info["host"] not in hosts:
                hosts.append(info["host"])
            entry = merged[bench["fullname"]]
            entry.setdefault("name", bench["name"])
            for key, value in info.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    entry.setdefault(key, []).append(float(value))
                else:
                    entry[key] = value
    return hosts, dict(merged)


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _rate(per_second: float) -> str:
    for scale, suffix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if per_second >= scale:
            return f"{per_second / scale:.3g}{suffix}/s"
    return f"{per_second:.3g} /s"


def experiments_table(benches: dict[str, dict[str, Any]]) -> list[str]:
    rows: dict[str, dict[str, str]] = defaultdict(dict)
    for entry in benches.values():
        if "us_per_decision" in entry and "problem" in entry:
            rows[entry["agent"]][entry["problem"]] = format_duration(_median(entry["us_per_decision"]) * 1e-6)
    if not rows:
        return []
    lines = ["| agent | " + " | ".join(PROBLEMS) + " |", "|---|" + "---|" * len(PROBLEMS)]
    lines += [f"| {agent} | " + " | ".join(row.get(p, "") for p in PROBLEMS) + " |" for agent, row in rows.items()]
    return lines


def rates_table(benches: dict[str, dict[str, Any]], module: str, keys: tuple[str, ...]) -> list[str]:
    chosen = [(e["name"], e) for name, e in benches.items() if module in name and any(k in e for k in keys)]
    if not chosen:
        return []
    lines = ["| benchmark | " + " | ".join(k.replace("_", " ") for k in keys) + " |", "|---|" + "---|" * len(keys)]
    for name, entry in chosen:
        cells = []
        for key in keys:
            if key not in entry:
                cells.append("")
            elif key.endswith("per_decision"):
                cells.append(format_duration(_median(entry[key]) * 1e-6))
            else:
                cells.append(_rate(_median(entry[key])))
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", type=Path, nargs="+", help="--benchmark-json files of the same suite")
    args = parser.parse_args(argv)
    hosts, benches = load(args.json)
    # One line per machine, with the range of load averages its benchmarks started at.
    loads: dict[str, list[float]] = defaultdict(list)
    for host in hosts:
        machine, _, load_text = host.partition(", load average ")
        loads[machine].extend([float(load_text)] if load_text else [])
    print(f"Median of {len(args.json)} run(s) of `pytest benches`, on:")
    for machine, values in loads.items():
        print(f"- {machine}" + (f", load average {min(values):g} to {max(values):g}" if values else ""))
    sections = (
        ("Whole experiments, online CPU time per decision (one thread, T = 250)", experiments_table(benches)),
        (
            "Replay, tuples of the log consumed per second (one thread)",
            rates_table(benches, "test_bench_replay.py", ("tuples_per_second",)),
        ),
        (
            "Value error, returns and environment steps per second",
            rates_table(benches, "test_bench_value_error.py", ("returns_per_second", "steps_per_second")),
        ),
        (
            "Python agents, online time per decision (one process)",
            rates_table(benches, "test_bench_python_agent.py", ("online_us_per_decision",)),
        ),
    )
    for title, lines in sections:
        if lines:
            print(f"\n**{title}**\n")
            print("\n".join(lines))


if __name__ == "__main__":
    main()
