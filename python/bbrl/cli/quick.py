"""``bbrl quick``: a small but real benchmark with a table and a figure."""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import smoke
from ..fileio import write_atomic
from .options import add_out, add_protocol_options, output_dir

if TYPE_CHECKING:
    import polars as pl
    from rich.console import Console

    from .. import agents
    from ..protocol import Run

__all__ = ["QUICK_SETTINGS", "not_in_quick", "quick_agents", "quick_cases", "register", "run_quick"]

#: Settings to run instead of a kind's first example setting (the registry's, which runs in seconds),
#: by kind; empty: every kind runs its registry example.
QUICK_SETTINGS: dict[str, dict[str, object]] = {}


def not_in_quick() -> dict[str, str]:
    """Kinds of :func:`bbrl.agents.kinds` that are not an algorithm of their own, and why (the
    registry's ``not_in_quick``)."""
    from .. import agents

    return {e["kind"]: e["not_in_quick"] for e in agents.REGISTRY if e["not_in_quick"]}


def quick_agents() -> tuple[agents.AgentSpec, ...]:
    """One agent per kind of the registry (:func:`bbrl.agents.kinds`), in its order: its first
    example setting, or its :data:`QUICK_SETTINGS` override."""
    from .. import agents

    chosen = []
    for kind in agents.registry.quick_kinds():
        override = QUICK_SETTINGS.get(kind)
        chosen.append(agents.create(kind, override) if override is not None else agents.examples(kind)[0])
    return tuple(chosen)


def quick_cases() -> tuple[tuple[str, str], ...]:
    """(test distribution, prior) pairs: every distribution problem of the registry with each of its
    priors (the accurate and the inaccurate, uniform, case)."""
    from .. import problems

    return tuple((entry["name"], prior) for entry in problems.REGISTRY for prior in entry["priors"])


def register(commands: Any) -> None:
    """Adds ``quick`` to the CLI's subcommands."""
    quick = commands.add_parser(
        "quick",
        help="a small real benchmark: every algorithm, one setting each, on GC, GDL and Grid, two priors",
        description="Runs every built-in algorithm at its first example setting (bbrl agents lists them) on "
        "every distribution problem with the accurate and the uniform prior, prints the table and writes it (CSV, "
        "Markdown) with a figure.",
    )
    add_out(quick, "output folder (default bbrl-quick)", default=Path("bbrl-quick"))
    add_protocol_options(quick, 100)
    quick.set_defaults(handler=command)


def command(args: argparse.Namespace, console: Console) -> int:
    """The ``quick`` subcommand."""
    run_quick(args, console)
    return 0


def run_quick(args: argparse.Namespace, console: Console) -> list[Run]:
    """Runs every algorithm (:func:`quick_agents`) on every case; writes summary.csv, table.md,
    returns.parquet and scores.png."""
    import polars as pl

    from ..analysis.tables import print_table, summary_frame, summary_markdown
    from ..protocol import Experiment

    out: Path = output_dir(args.out)
    runs: list[Run] = []
    chosen = quick_agents()
    experiments: dict[str, Experiment] = {}
    n_mdps, horizon = smoke.experiment_size(args.n_mdps, args.horizon)
    for test, prior in quick_cases():
        if test not in experiments:
            experiments[test] = Experiment(test, n_mdps=n_mdps, gamma=args.gamma, horizon=horizon, seed=args.seed)
        for agent in chosen:
            runs.append(experiments[test].run(agent, prior=prior, threads=args.threads, progress=console.is_terminal))
    frame = summary_frame(runs)
    print_table(frame, console, title=f"bbrl quick: N = {n_mdps} MDPs, gamma = {args.gamma}, seed = {args.seed}")
    write_atomic(out / "summary.csv", frame.write_csv().encode())
    write_atomic(out / "table.md", summary_markdown(frame).encode())
    buffer = io.BytesIO()
    pl.concat([run.to_polars() for run in runs]).write_parquet(buffer)
    write_atomic(out / "returns.parquet", buffer.getvalue())
    write_atomic(out / "scores.png", _figure(frame))
    console.print(f"wrote {out}/summary.csv, table.md, returns.parquet and scores.png")
    return runs


def _figure(frame: pl.DataFrame) -> bytes:
    """Mean score with its 95% interval per agent, one panel per problem, accurate vs uniform prior."""
    import matplotlib
    import polars as pl

    from ..protocol.schema import Col

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    problems = list(dict.fromkeys(frame[Col.EXPERIMENT].to_list()))
    fig, axes = plt.subplots(1, len(problems), figsize=(5 * len(problems), 4), squeeze=False)
    for ax, problem in zip(axes[0], problems, strict=True):
        sub = frame.filter(pl.col(Col.EXPERIMENT) == problem)
        priors = list(dict.fromkeys(sub[Col.PRIOR].to_list()))
        labels = list(dict.fromkeys(sub[Col.AGENT].to_list()))
        width = 0.8 / max(1, len(priors))
        for k, prior in enumerate(priors):
            rows = sub.filter(pl.col(Col.PRIOR) == prior)
            by_agent = {r[Col.AGENT]: r for r in rows.iter_rows(named=True)}
            xs = [i + (k - (len(priors) - 1) / 2) * width for i in range(len(labels))]
            means = [by_agent[a][Col.MEAN] if a in by_agent else float("nan") for a in labels]
            errs = [by_agent[a][Col.CI95] if a in by_agent else 0.0 for a in labels]
            ax.bar(xs, means, width=width, yerr=errs, capsize=3, label=f"prior {prior}")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
        ax.set_title(problem)
        ax.set_ylabel("mean discounted return (95% interval)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()
