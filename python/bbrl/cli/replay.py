"""``bbrl replay``: evaluate how an agent would have learned online from a logged data set."""

from __future__ import annotations

import argparse
import io
import json
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .options import (
    add_agent,
    add_gamma,
    add_out,
    add_params,
    add_seed,
    add_threads,
    check_output_dir,
    finite,
    output_dir,
    parse_params,
    whole,
)

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

EXAMPLE = "bbrl replay LOG.parquet --agent psrl --param k=10 --method psrs --runs 100 --out DIR"


__all__ = ["register"]


def register(commands: Any) -> None:
    """Adds the ``replay`` subcommand to the CLI's subparsers."""
    parser = commands.add_parser(
        "replay",
        help="offline evaluation of an online learner from a logged data set (Queue, PSRS, PERS)",
        description="Replays a log of (episode, t, state, action, reward, next_state) to a trained agent as if it "
        f"learned online (Mandel et al. 2016). Example: {EXAMPLE}",
    )
    parser.add_argument(
        "log", type=Path, help="the log (.parquet or .csv); per-row logging probabilities in p_0.. p_{A-1}"
    )
    add_agent(parser)
    add_params(parser)
    parser.add_argument(
        "--method",
        choices=["queue", "psrs", "pers", "model"],
        default="psrs",
        help="evaluator (default psrs; model: the log's maximum-likelihood MDP, needs --max-episodes)",
    )
    parser.add_argument("--runs", type=whole(1), default=100, help="independent evaluations (default 100)")
    add_out(parser, "output folder (created if missing)", required=True)
    parser.add_argument("--n-states", type=whole(1), default=None, help="default: 1 + the largest state id in the log")
    parser.add_argument(
        "--n-actions", type=whole(1), default=None, help="default: the p_* columns, else 1 + largest action"
    )
    parser.add_argument(
        "--start-state",
        type=whole(0),
        default=None,
        help="default: the state of every t = 0 row when they agree, else the log's own start states",
    )
    parser.add_argument("--logging-policy", type=Path, default=None, help="a .npy (S, A) table of the logging policy")
    parser.add_argument("--episode-end", default="start", help="'start' (default), 'terminal' or a horizon (steps)")
    add_gamma(parser, 0.95, "the agent's training discount, and the returns' unless --return-gamma (default 0.95)")
    parser.add_argument(
        "--return-gamma",
        type=finite,
        default=None,
        help="discount of the reported returns and the truth (default: --gamma; 1 for undiscounted returns)",
    )
    parser.add_argument("--m", default=None, help="PERS: 'policy', 'per_step', 'logging' or a number")
    parser.add_argument("--max-length", type=whole(1), default=None, help="PERS: the longest possible episode")
    parser.add_argument("--weighted", action="store_true", help="PERS: importance-weighted (unbiased) estimates")
    parser.add_argument("--psrs-order", choices=["check_first", "paper"], default=None, help="PSRS: 'paper' pops first")
    parser.add_argument(
        "--max-episodes", type=whole(1), default=None, help="episodes per run at most (required by model)"
    )
    parser.add_argument("--truth", default=None, help="a named environment to plot the online truth against")
    add_seed(parser)
    add_threads(parser)
    parser.set_defaults(handler=run)


def _episode_end(text: str) -> Any:
    return int(text) if text.strip().isdigit() else text


def _m(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return text


def _infer_spaces(frame: pl.DataFrame, args: argparse.Namespace) -> tuple[int, int, int | None]:
    import polars as pl

    from ..replay.dataset import integer_column

    for column in ("state", "action", "next_state", "t"):
        if column not in frame.columns:
            raise ValueError(f"the log lacks column {column!r}")
    if frame.height == 0:
        raise ValueError(f"log file {str(args.log)!r} has no rows")
    # The ids are checked before their maximum is taken (a column of strings would compare badly).
    state, action, next_state = (integer_column(frame, c) for c in ("state", "action", "next_state"))
    n_states = args.n_states
    if n_states is None:
        n_states = int(max(state.max(), next_state.max())) + 1
    n_actions = args.n_actions
    if n_actions is None:
        probabilities = [c for c in frame.columns if c.startswith("p_")]
        n_actions = len(probabilities) if probabilities else int(action.max()) + 1
    start = args.start_state
    if start is None:
        starts = frame.filter(pl.col("t") == 0)["state"].unique().to_list()
        # Several start states: replay from the log's own starts.
        start = int(starts[0]) if len(starts) == 1 else None
    return n_states, n_actions, start


def run(args: argparse.Namespace, console: Any) -> int:
    """The ``replay`` subcommand."""
    import numpy as np

    from .. import agents, replay
    from ..fileio import write_atomic
    from ..replay.results import describe_m

    check_output_dir(args.out)  # refused before anything runs when it cannot be a folder
    frame = replay.read_log(args.log)
    n_states, n_actions, start = _infer_spaces(frame, args)
    table = replay.read_logging_policy(args.logging_policy) if args.logging_policy is not None else None
    data = replay.Dataset(frame, n_states, n_actions, start, logging_policy=table)
    output_dir(args.out)  # made once the log reads: a bad log leaves nothing behind
    spec = agents.create(args.agent, parse_params(args.param))
    trained = spec.train(data.uniform_prior(), gamma=args.gamma, seed=args.seed)
    episode_end = _episode_end(args.episode_end)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = replay.evaluate(
            trained,
            data,
            args.method,
            seed=args.seed,
            episode_end=episode_end,
            gamma=args.return_gamma,
            runs=args.runs,
            threads=args.threads,
            m=_m(args.m),
            max_length=args.max_length,
            weighted=args.weighted,
            psrs_order=args.psrs_order,
            max_episodes=args.max_episodes,
        )
    for warning in caught:
        print(f"bbrl: warning: {_cli_spelling(str(warning.message))}", file=sys.stderr)
    settings = runs.settings
    buffer = io.BytesIO()
    runs.to_polars().write_parquet(buffer)
    write_atomic(args.out / "episodes.parquet", buffer.getvalue())
    curve = runs.curve(weighted=args.weighted)
    truth = None
    if args.truth is not None:
        width = max(curve.height, 1)
        truth = replay.online_returns(
            trained, args.truth, width, runs=args.runs, seed=args.seed, episode_end=episode_end, gamma=settings["gamma"]
        )
    write_atomic(args.out / "curve.csv", _curve_table(curve, truth).write_csv().encode())
    ax = runs.plot(truth=truth, weighted=args.weighted, label=f"{args.method} replay of {trained.label}")
    for suffix in ("png", "svg"):
        image = io.BytesIO()
        ax.figure.savefig(image, format=suffix, bbox_inches="tight")
        write_atomic(args.out / f"curve.{suffix}", image.getvalue())
    import matplotlib.pyplot as plt

    plt.close(ax.figure)
    m_values = np.concatenate([r.m_values for r in runs])
    summary = {
        "log": str(args.log),
        "agent": trained.label,
        "method": args.method,
        "runs": args.runs,
        "seed": args.seed,
        "episode_end": episode_end,
        "gamma": settings["gamma"],
        "agent_gamma": settings["agent_gamma"],
        "m": settings["m"],
        "m_used": None if m_values.size == 0 else {"min": float(m_values.min()), "max": float(m_values.max())},
        "max_length": settings["max_length"],
        "weighted": settings["weighted"],
        "truth": None if truth is None else _truth_summary(args.truth, truth, settings["gamma"]),
        "n_states": n_states,
        "n_actions": n_actions,
        "start_state": "logged" if start is None else start,
        "psrs_order": settings["psrs_order"],
        "max_episodes": args.max_episodes,
        "logged_transitions": data.n_rows,
        "logged_episodes": data.n_episodes,
        "episodes_per_run": {
            "mean": float(runs.n_episodes.mean()),
            "min": int(runs.n_episodes.min()),
            "max": int(runs.n_episodes.max()),
        },
        "tuples_used_mean": float(np.mean([r.tuples_used for r in runs])),
        "stop_reasons": {
            k: int(v) for k, v in zip(*np.unique([r.stop_reason for r in runs], return_counts=True), strict=True)
        },
    }
    write_atomic(args.out / "summary.json", (json.dumps(summary, indent=1) + "\n").encode())
    m_text = f", {describe_m(m_values)} (m={settings['m']!r})" if args.method == "pers" else ""
    console.print(
        f"{args.method} replay of {trained.label}: {summary['episodes_per_run']['mean']:.1f} episodes per run "
        f"(min {summary['episodes_per_run']['min']}, max {summary['episodes_per_run']['max']}) over {args.runs} runs"
        f"{m_text}; returns discounted by {settings['gamma']:g}; results in {args.out}"
    )
    return 0


#: The evaluator's option names, as a warning spells them, and this command's.
CLI_SPELLINGS = (
    ("pass gamma=", "pass --return-gamma "),
    ("or gamma= ", "or --return-gamma "),
    ("pass m='logging'", "pass --m logging"),
    ("weighted=True", "--weighted"),
    ("(episode_end=", "(--episode-end "),
    ("(max_length or an int episode_end)", "(--max-length or an int --episode-end)"),
)


def _cli_spelling(text: str) -> str:
    """A warning of :func:`bbrl.replay.evaluate` with the options spelled as on this command line."""
    for python, cli in CLI_SPELLINGS:
        text = text.replace(python, cli)
    return text


def _truth_summary(env: str, truth: np.ndarray, gamma: float) -> dict[str, Any]:
    """The online truth's settings: the environment, its runs and episodes, the returns' discount."""
    return {"env": env, "runs": int(truth.shape[0]), "episodes": int(truth.shape[1]), "gamma": gamma}


def _curve_table(curve: pl.DataFrame, truth: np.ndarray | None) -> pl.DataFrame:
    """The replay curve, and beside it the online truth's (``truth_runs``, ``truth_mean``,
    ``truth_ci95``) when one was computed, on the episodes of either."""
    import numpy as np
    import polars as pl

    if truth is None:
        return curve
    from ..replay.results import curve_frame

    online = curve_frame(np.asarray(truth, dtype=np.float64)).select(
        "episode", *(pl.col(c).alias(f"truth_{c}") for c in ("runs", "mean", "ci95"))
    )
    return curve.join(online, on="episode", how="full", coalesce=True).sort("episode")
