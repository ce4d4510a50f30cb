"""``bbrl value-error``: certified reference values for CMAPVE (Sajed, Chung and White 2018), the
per-state certification of Algorithm 2, and the paper's Figure 1 from one command."""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import smoke
from .options import (
    DeprecatedAlias,
    add_env,
    add_gamma,
    add_out,
    add_seed,
    add_threads,
    finite,
    output_dir,
    output_file,
    whole,
)

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["REFERENCES_FILE", "STATES_FILE", "register"]

#: What ``value-error references --out DIR`` writes.
REFERENCES_FILE = "references.parquet"
#: What ``value-error states --out DIR`` writes.
STATES_FILE = "states.parquet"
#: Environment steps a command runs without ``--force`` (about 10 minutes on two free cores).
DEFAULT_BUDGET_STEPS = 1e10

EXAMPLES = """\
examples:
  bbrl value-error references --env mountain-car --states 100 --epsilon 0.05 --delta 0.1 --out refs
  bbrl value-error references --env puddle-world --states 30 --epsilon 0.1 --delta 0.1 --k 100 --out pw
  bbrl value-error references --env mountain-car --epsilon 0.1 --delta 0.1 --c 1 --k 50 --out refs
      (no --states: Algorithm 1's number of states for epsilon, delta, c and k)
  bbrl value-error references --env mountain-car --gamma 1 --states 20 --epsilon 0.2 --max-rollout-steps 5000 --out mc1
      (undiscounted, no --time-limit: every rollout runs to termination, at most 5000 steps)
  bbrl value-error states --env puddle-world --states 20 --epsilon 0.05 --delta 0.1 --v-max 8000 --out pw
      (Algorithm 2 alone: each state certified to per-state epsilon and delta)
  bbrl value-error study --quick --out figure1      (the paper's Figure 1, both stopping rules)
"""


def register(commands: Any) -> None:
    """Adds ``value-error`` and its ``references``, ``states`` and ``study`` subcommands."""
    parser = commands.add_parser(
        "value-error",
        help="high-confidence value-error references (CMAPVE, Sajed et al. 2018)",
        description="Certified reference values for scoring learned value functions by CMAPVE.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="value_error_command", required=True, metavar="VALUE_ERROR_COMMAND")
    refs = sub.add_parser(
        "references",
        help="compute reference values at sampled states and save them to Parquet",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_env(refs, "box2", "the domain")
    refs.add_argument(
        "--states",
        type=whole(1),
        default=None,
        help="states drawn uniformly (default: Algorithm 1's m for the accuracy)",
    )
    refs.add_argument("--epsilon", type=finite, default=0.1, help="target accuracy of CMAPVE (default 0.1)")
    refs.add_argument("--delta", type=finite, default=0.1, help="failure probability (default 0.1)")
    refs.add_argument("--c", type=finite, default=1.0, help="clip level of the loss (default 1)")
    refs.add_argument("--k", type=whole(1), default=1, help="how many times the error will be queried (default 1)")
    refs.add_argument("--split", choices=["corrected", "paper"], default="corrected", help="accuracy split")
    _add_certification(refs)
    refs.add_argument(
        "--max-rollout-steps",
        type=whole(1),
        default=None,
        help="with --gamma 1 and no --time-limit (rollouts to termination): the cap on a rollout "
        "(default 100000); a rollout that reaches it is an error unless --accept-truncated",
    )
    refs.add_argument(
        "--accept-truncated",
        action="store_true",
        help="certify the return truncated at --max-rollout-steps where a rollout reaches it, instead of refusing",
    )
    refs.add_argument(
        "--discount",
        type=finite,
        dest="gamma",
        default=argparse.SUPPRESS,
        action=DeprecatedAlias,
        new="--gamma",
        help=argparse.SUPPRESS,
    )
    add_out(refs, f"output folder: writes DIR/{REFERENCES_FILE} (created if missing)", required=True)
    refs.set_defaults(handler=_command_references)

    states = sub.add_parser(
        "states",
        help="certify the value of each of m uniform states to per-state epsilon and delta (Algorithm 2)",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_env(states, "box2", "the domain")
    states.add_argument(
        "--states", type=whole(1), default=100, help="states drawn uniformly (default 100, the paper's)"
    )
    states.add_argument("--epsilon", type=finite, default=0.1, help="relative accuracy of each value (default 0.1)")
    states.add_argument("--delta", type=finite, default=0.1, help="failure probability of each value (default 0.1)")
    _add_certification(states)
    add_out(states, f"output folder: writes DIR/{STATES_FILE} (created if missing)", required=True)
    states.set_defaults(handler=_command_states)

    study = sub.add_parser(
        "study",
        help="Sajed et al.'s Figure 1: returns per state for each epsilon, delta and stopping rule",
        description="Returns sampled per state to certify Mountain Car and Puddle World values, at "
        "epsilon in {0.1, 0.05, 0.01}, delta in {0.1, 0.01}, tau = 1, V_max 100 and 8000, with EBGStop and "
        "the betting rule side by side. States its cost (from a pilot) before it starts.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    study.add_argument("--quick", action="store_true", help="20 states, no Puddle World at epsilon 0.01 (minutes)")
    study.add_argument("--states", type=whole(1), default=100, help="states per domain (default 100, the paper's)")
    study.add_argument("--domains", nargs="+", default=["mountain-car", "puddle-world"], help="domains (default both)")
    study.add_argument("--epsilons", nargs="+", type=finite, default=[0.1, 0.05, 0.01], help="accuracies")
    study.add_argument("--deltas", nargs="+", type=finite, default=[0.1, 0.01], help="failure probabilities")
    study.add_argument("--rules", nargs="+", choices=["ebgstop", "betting"], default=["ebgstop", "betting"])
    _add_budget(study)
    add_seed(study, "seed of the states and rollouts (default 0)")
    add_threads(study)
    add_out(
        study,
        "report folder: rows.parquet, summary.csv, figure1.png/svg, report.md (default bbrl-value-error-study or "
        "bbrl-value-error-study-quick)",
    )
    study.set_defaults(handler=_command_study)


def _add_certification(parser: argparse.ArgumentParser) -> None:
    """The options of every certification: tau, the stopping rule and its knobs, the range, the
    cap, the discount, Mountain Car's policy, the budget, seed and threads."""
    parser.add_argument("--tau", type=finite, default=1.0, help="floor of the relative error, value units (default 1)")
    parser.add_argument(
        "--rule",
        choices=["betting", "ebgstop"],
        default="betting",
        help="stopping rule: the betting confidence sequence (default) or the paper's EBGStop",
    )
    parser.add_argument(
        "--bets",
        choices=["aimed", "anytime"],
        default="aimed",
        help="the betting rule's bets: aimed at the width it stops at (default) or the anytime plug-in bets alone",
    )
    parser.add_argument("--variant", choices=["checkpoints", "every"], default="checkpoints", help="EBGStop checks")
    parser.add_argument(
        "--v-max",
        type=finite,
        default=None,
        help="range of the returns, value units (the paper's V_max: 100 Mountain Car, 8000 Puddle World; "
        "default: the range the reward bounds give a rollout)",
    )
    parser.add_argument("--max-samples", type=whole(1), default=100_000_000, help="returns per state at most")
    add_gamma(parser, 0.99, "discount in (0, 1] (default 0.99, as the paper)")
    parser.add_argument(
        "--time-limit",
        type=whole(1),
        default=None,
        help="steps after which an episode is cut: the values are over at most that many steps, and the "
        "command reports how many rollouts reached it (without it, --gamma 1 runs every rollout to termination)",
    )
    parser.add_argument(
        "--random-share",
        type=finite,
        default=None,
        help="Mountain Car: random-action share of energy pumping (default: the environment registry's, "
        "Sajed et al.'s; bbrl envs)",
    )
    _add_budget(parser)
    add_seed(parser, "seed of the states and rollouts (default 0)")
    add_threads(parser)


def _add_budget(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--budget",
        type=finite,
        default=DEFAULT_BUDGET_STEPS,
        help=f"environment steps to run without --force, from a pilot's estimate (default {DEFAULT_BUDGET_STEPS:.0e})",
    )
    parser.add_argument("--force", action="store_true", help="run even above --budget")


def _setup(args: argparse.Namespace) -> tuple[Any, Any]:
    from .. import value_error as ve

    # The environment's default policy is its registry entry's; --random-share tunes energy pumping's.
    return ve.environment(args.env, args.gamma, args.time_limit), ve.default_policy(args.env, args.random_share)


def _print_cuts(console: Console, n_cut: Any, n_samples: Any, length: int, to_termination: bool = False) -> None:
    import numpy as np

    cut = int(np.sum(n_cut))
    what = "cap" if to_termination else "length"
    if cut:
        console.print(
            f"{cut} of {int(np.sum(n_samples))} rollouts reached the {length}-step {what} before their episode "
            f"ended ({int(np.count_nonzero(n_cut))} states); the values are of returns cut there"
        )
    elif to_termination:
        console.print(f"every rollout ran to termination, within the {length}-step cap")
    else:
        console.print(f"every rollout ended before the {length}-step length")


def _check_budget(args: argparse.Namespace, console: Console, cost: Any) -> None:
    console.print(f"expected cost: {cost.describe()}")
    if cost.steps > args.budget and not args.force:
        raise ValueError(
            f"the expected {cost.steps:.3g} steps exceed --budget {args.budget:.3g}: "
            "raise epsilon or delta, lower --states, or pass --force"
        )


def _command_references(args: argparse.Namespace, console: Console) -> int:
    import numpy as np

    from .. import value_error as ve
    from ..checks import count
    from ..value_error.cost import run_pilot

    path = output_file(args.out, REFERENCES_FILE, ".parquet")
    env, policy = _setup(args)
    target_m = ve.sample_size(args.epsilon, args.delta, args.c, args.k)
    m = smoke.value_error_states(target_m if args.states is None else count(args.states, "--states", 1))
    accuracy = ve.accuracies(args.epsilon, args.c, args.split)
    state_delta = args.delta / (2 * m)
    pilot = run_pilot(
        env, policy, epsilon=accuracy.eps_bar, delta=state_delta, tau=args.tau, rule=args.rule, bets=args.bets,
        value_range=args.v_max, rollout_length=args.max_rollout_steps, seed=args.seed, threads=args.threads,
    )  # fmt: skip
    _check_budget(args, console, pilot.cost(m, accuracy.eps_bar))
    start = time.perf_counter()
    refs = ve.reference_values(
        env, policy, m, epsilon=args.epsilon, delta=args.delta, tau=args.tau, c=args.c, k=args.k, split=args.split,
        rule=args.rule, bets=args.bets, variant=args.variant, max_samples=args.max_samples, value_range=args.v_max,
        max_rollout_steps=args.max_rollout_steps, accept_truncated=args.accept_truncated, seed=args.seed,
        threads=args.threads,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    refs.save(path)
    p = refs.params
    capped = sum(r not in ("relative", "absolute") for r in refs.reasons)
    console.print(
        f"{env.name} under {policy.description}: {refs.m} states, eps_bar {p['eps_bar']:.4g}, rule {args.rule}, "
        f"rollouts of at most {p['rollout_length']} steps, return range {p['value_range']:.4g}"
    )
    console.print(
        f"returns per state: median {int(np.median(refs.n_samples))}, max {int(refs.n_samples.max())}; "
        f"{int(refs.n_steps.sum())} steps in {seconds:.1f} s"
    )
    if refs.n_cut is not None:
        _print_cuts(console, refs.n_cut, refs.n_samples, int(p["rollout_length"]), bool(p["to_termination"]))
    bound = "none (some states hit --max-samples)" if capped else f"{refs.guaranteed_error:.4g}"
    console.print(f"guaranteed CMAPVE error for {p['k']} queries at 1 - delta = {1 - p['delta']:.3g}: {bound}")
    if refs.m < target_m:
        console.print(f"  (epsilon {args.epsilon:g} needs m = {target_m} states; {refs.m} give the bound above)")
    console.print(f"wrote {path}")
    return 0 if not capped else 1


def _command_states(args: argparse.Namespace, console: Console) -> int:
    import io

    import numpy as np
    import polars as pl

    from .. import value_error as ve
    from ..fileio import write_atomic
    from ..value_error.cost import run_pilot

    out = output_dir(args.out)
    env, policy = _setup(args)
    pilot = run_pilot(
        env, policy, epsilon=args.epsilon, delta=args.delta, tau=args.tau, rule=args.rule, bets=args.bets,
        value_range=args.v_max, seed=args.seed, threads=args.threads,
    )  # fmt: skip
    n_states = smoke.value_error_states(args.states)
    _check_budget(args, console, pilot.cost(n_states, args.epsilon))
    states = env.uniform_states(n_states, args.seed)
    start = time.perf_counter()
    values = ve.state_values(
        env, policy, states, epsilon=args.epsilon, delta=args.delta, tau=args.tau, rule=args.rule, bets=args.bets,
        variant=args.variant, value_range=args.v_max, max_samples=args.max_samples, seed=args.seed,
        threads=args.threads,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    frame = pl.DataFrame(
        {
            "state_0": states[:, 0],
            "state_1": states[:, 1],
            "value": values.values,
            "n_samples": values.n_samples,
            "n_steps": values.n_steps,
            "n_cut": values.n_cut,
            "reason": list(values.reasons),
        }
    ).with_columns(
        pl.lit(args.epsilon).alias("param.epsilon"),
        pl.lit(args.delta).alias("param.delta"),
        pl.lit(args.tau).alias("param.tau"),
        pl.lit(args.rule).alias("param.rule"),
        pl.lit(args.bets).alias("param.bets"),
        pl.lit(values.value_low).alias("param.value_low"),
        pl.lit(values.value_range).alias("param.value_range"),
        pl.lit(values.rollout_length).alias("param.rollout_length"),
        pl.lit(args.seed).alias("param.seed"),
    )
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    path = write_atomic(out / STATES_FILE, buffer.getvalue())
    n = values.n_samples
    capped = sum(r not in ("relative", "absolute") for r in values.reasons)
    console.print(
        f"{env.name}, rule {args.rule}: returns per state median {int(np.median(n))}, quartiles "
        f"{int(np.quantile(n, 0.25))}-{int(np.quantile(n, 0.75))}, max {int(n.max())}; "
        f"{int(values.n_steps.sum())} steps in {seconds:.1f} s; {capped} states uncertified"
    )
    _print_cuts(console, values.n_cut, values.n_samples, values.rollout_length)
    console.print(f"wrote {path}")
    return 0 if not capped else 1


def _command_study(args: argparse.Namespace, console: Console) -> int:
    from ..protocol.schema import host_line
    from ..value_error import study
    from ..value_error.study_report import markdown_table, write_report

    out = output_dir(args.out or Path("bbrl-value-error-study-quick" if args.quick else "bbrl-value-error-study"))
    settings = study.StudySettings(
        domains=study.domain_names(args.domains),
        states=args.states,
        epsilons=tuple(args.epsilons),
        deltas=tuple(args.deltas),
        rules=tuple(args.rules),
        seed=args.seed,
        threads=args.threads,
    )
    if args.quick:
        settings = study.quick(settings)
    settings = dataclasses.replace(settings, states=smoke.value_error_states(settings.states))
    console.print(host_line())
    console.print("pilot (4 states per domain, rule and delta) ...")
    plan = study.plan(settings)
    console.print(
        f"{len(plan.cells)} cells of {settings.states} states: expected about {plan.returns:.3g} returns, "
        f"{plan.steps:.3g} steps, {plan.seconds / 60:.1f} min"
    )
    if plan.steps > args.budget and not args.force:
        raise ValueError(
            f"the expected {plan.steps:.3g} steps exceed --budget {args.budget:.3g}: use --quick, fewer --states, "
            "or pass --force"
        )
    start = time.perf_counter()

    def progress(i: int, total: int, cell: tuple[str, float, float, str], seconds: float, returns: int) -> None:
        domain, eps, delta, rule = cell
        console.print(
            f"[{i}/{total}] {domain} eps {eps:g} delta {delta:g} {rule}: {returns:,} returns in {seconds:.1f} s "
            f"(elapsed {time.perf_counter() - start:.0f} s)"
        )

    rows = study.run(settings, progress)
    table = study.summary(rows)
    header = [
        f"Machine: {host_line().removeprefix('machine: ')}.",  # host_line names itself
        f"States per domain: {settings.states}, drawn uniformly (seed {settings.seed}); tau = {settings.tau:g}; "
        f"V_max {', '.join(f'{d} {v:g}' for d, v in study.PAPER_V_MAX.items())}; discount 0.99; Mountain Car "
        "under energy pumping with 60% random actions, Puddle World under the uniform policy.",
        f"Left out: {', '.join(f'{d} at epsilon {e:g}' for d, e in settings.skip) or 'nothing'}. "
        f"Total {rows['returns'].sum():,} returns, {rows['steps'].sum():,} steps in "
        f"{time.perf_counter() - start:.0f} s (pilot estimate: {plan.steps:.3g} steps).",
    ]
    paths = write_report(out, rows, table, header)
    console.print(markdown_table(table))
    console.print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0
