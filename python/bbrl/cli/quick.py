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

__all__ = ["NOT_IN_QUICK", "QUICK_CASES", "QUICK_SETTINGS", "quick_agents", "register", "run_quick"]

#: One representative setting per kind, cheap enough for a minute or two on 2 cores.
QUICK_SETTINGS: dict[str, dict[str, object]] = {
    "random": {},
    "egreedy": {"epsilon": 0.1},
    "softmax": {"tau": 1.0},
    "beb": {"beta": 1.0},
    "bamcp": {"k": 10, "depth": 15},
    "bfs3": {"k": 10, "c": 2, "depth": 15},
    "sboss": {"epsilon": 1e-3, "delta": 7.0},
    "psrl": {},
    "optimal": {},
    "oppsds": {"formula_set": 2, "n_draws": 200},
}
#: Kinds of :func:`bbrl.agents.kinds` that are not an algorithm of their own, and why.
NOT_IN_QUICK: dict[str, str] = {
    "formula": "a fixed index formula is what OPPS-DS chooses offline; OPPS-DS stands for it",
}


def quick_agents() -> tuple[agents.AgentSpec, ...]:
    """One agent per kind of the registry (:func:`bbrl.agents.kinds`), in its order.

    Raises:
        ValueError: a kind has neither a quick setting nor a reason to be left out (a new agent).
    """
    from .. import agents

    chosen = []
    for kind in agents.kinds():
        if kind in NOT_IN_QUICK:
            continue
        if kind not in QUICK_SETTINGS:
            raise ValueError(f"agent kind {kind!r} has no setting in bbrl.cli.quick.QUICK_SETTINGS")
        chosen.append(agents.create(kind, QUICK_SETTINGS[kind]))
    return tuple(chosen)


#: (test distribution, prior) pairs: the accurate and the inaccurate (uniform) case of each problem.
QUICK_CASES: tuple[tuple[str, str], ...] = (
    ("GC", "GC"),
    ("GC", "UGC"),
    ("GDL", "GDL"),
    ("GDL", "UGDL"),
    ("Grid", "Grid"),
    ("Grid", "UGrid"),
)


def register(commands: Any) -> None:
    """Adds ``quick`` to the CLI's subcommands."""
    quick = commands.add_parser(
        "quick",
        help="a small real benchmark: every algorithm, one setting each, on GC, GDL and Grid, two priors",
        description="Runs every built-in algorithm at one representative setting (bbrl.cli.quick.QUICK_SETTINGS) "
        "on the three problems with the accurate and the uniform prior, prints the table and writes it (CSV, "
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
    for test, prior in QUICK_CASES:
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
