"""``bbrl value-error``: certified reference values for CMAPVE (Sajed, Chung and White 2018)."""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from rich.console import Console

from .. import smoke
from .options import DeprecatedAlias, add_env, add_gamma, add_out, add_seed, add_threads, output_file

__all__ = ["REFERENCES_FILE", "register"]

#: What ``value-error references --out DIR`` writes.
REFERENCES_FILE = "references.parquet"

EXAMPLES = """\
examples:
  bbrl value-error references --env mountain-car --states 100 --epsilon 0.05 --delta 0.1 --out refs
  bbrl value-error references --env puddle-world --states 30 --epsilon 0.1 --delta 0.1 --k 100 --out pw
  bbrl value-error references --env mountain-car --epsilon 0.1 --delta 0.1 --c 1 --k 50 --out refs
      (no --states: Algorithm 1's number of states for epsilon, delta, c and k)
"""


def register(commands: Any) -> None:
    """Adds ``value-error`` and its ``references`` subcommand."""
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
        "--states", type=int, default=None, help="states drawn uniformly (default: Algorithm 1's m for the accuracy)"
    )
    refs.add_argument("--epsilon", type=float, default=0.1, help="target accuracy of CMAPVE (default 0.1)")
    refs.add_argument("--delta", type=float, default=0.1, help="failure probability (default 0.1)")
    refs.add_argument("--tau", type=float, default=1.0, help="floor of the relative error, value units (default 1)")
    refs.add_argument("--c", type=float, default=1.0, help="clip level of the loss (default 1)")
    refs.add_argument("--k", type=int, default=1, help="how many times the error will be queried (default 1)")
    refs.add_argument("--split", choices=["corrected", "paper"], default="corrected", help="accuracy split")
    refs.add_argument("--variant", choices=["checkpoints", "every"], default="checkpoints", help="EBGStop checks")
    refs.add_argument("--max-samples", type=int, default=100_000_000, help="returns per state at most")
    add_gamma(refs, 0.99, "discount (default 0.99, as the paper)")
    refs.add_argument(
        "--discount",
        type=float,
        dest="gamma",
        default=argparse.SUPPRESS,
        action=DeprecatedAlias,
        new="--gamma",
        help=argparse.SUPPRESS,
    )
    refs.add_argument(
        "--random-share", type=float, default=0.6, help="Mountain Car: random-action share of energy pumping (0.6)"
    )
    add_seed(refs, "seed of the states and rollouts (default 0)")
    add_threads(refs)
    add_out(refs, f"output folder: writes DIR/{REFERENCES_FILE} (created if missing)", required=True)
    refs.set_defaults(handler=_command_references)


def _command_references(args: argparse.Namespace, console: Console) -> int:
    from .. import value_error as ve

    path = output_file(args.out, REFERENCES_FILE, ".parquet")
    if args.env == "MountainCar":
        env, policy = ve.mountain_car(args.gamma), ve.energy_pumping(args.random_share)
    else:
        env, policy = ve.puddle_world(args.gamma), ve.uniform_policy(4)
    start = time.perf_counter()
    refs = ve.reference_values(
        env,
        policy,
        smoke.value_error_states(args.states),
        epsilon=args.epsilon,
        delta=args.delta,
        tau=args.tau,
        c=args.c,
        k=args.k,
        split=args.split,
        variant=args.variant,
        max_samples=args.max_samples,
        seed=args.seed,
        threads=args.threads,
    )
    seconds = time.perf_counter() - start
    refs.save(path)
    p = refs.params
    capped = sum(r not in ("relative", "absolute") for r in refs.reasons)
    console.print(
        f"{env.name} under {policy.description}: {refs.m} states, eps_bar {p['eps_bar']:.4g}, "
        f"rollouts of at most {p['rollout_length']} steps, return range {p['value_range']:.4g}"
    )
    console.print(
        f"returns per state: median {int(np.median(refs.n_samples))}, max {int(refs.n_samples.max())}; "
        f"{int(refs.n_steps.sum())} steps in {seconds:.1f} s"
    )
    bound = "none (some states hit --max-samples)" if capped else f"{refs.guaranteed_error:.4g}"
    console.print(f"guaranteed CMAPVE error for {p['k']} queries at 1 - delta = {1 - p['delta']:.3g}: {bound}")
    console.print(f"wrote {path}")
    return 0 if not capped else 1
