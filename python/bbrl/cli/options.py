"""The options every ``bbrl`` subcommand shares, defined once, and the one command-line convention.

* ``--out DIR``: a results folder (created if missing); a command that writes one file writes it
  inside (``run``: DIR/results.csv, ``value-error references``: DIR/references.parquet,
  ``formulas``: DIR/F<n>.txt).
* ``--seed N``: the seed of every random stream, default 0.
* ``--threads N``: worker threads (default: every core), on every subcommand that runs work.
* ``--gamma G``: the discount factor.
* ``--env NAME``: a named environment.
* ``--agent KIND`` and ``--param NAME=VALUE`` (repeatable): a built-in agent and its parameters.

Old spellings (``--discount``, ``--csv FILE``, ``--out FILE``) still work for one release: they
print a deprecation warning on stderr (:func:`warn_deprecated`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "DeprecatedAlias",
    "add_agent",
    "add_env",
    "add_gamma",
    "add_out",
    "add_params",
    "add_protocol_options",
    "add_seed",
    "add_threads",
    "env_name",
    "output_dir",
    "output_file",
    "parse_params",
    "parse_value",
    "warn_deprecated",
]


def warn_deprecated(old: str, new: str) -> None:
    """Says on stderr that ``old`` is deprecated for ``new`` (it still works for one release)."""
    print(f"bbrl: DeprecationWarning: {old} is deprecated, use {new} (removed in the next release)", file=sys.stderr)


class DeprecatedAlias(argparse.Action):
    """An old option spelling: stores its value like the new option and warns on stderr."""

    def __init__(self, option_strings: Sequence[str], dest: str, new: str = "", **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        warn_deprecated(option or "/".join(self.option_strings), self.new)
        setattr(namespace, self.dest, values)


def add_out(parser: argparse.ArgumentParser, help: str, required: bool = False, default: Path | None = None) -> None:
    """``--out DIR``: the results folder of the command."""
    parser.add_argument("--out", type=Path, metavar="DIR", required=required, default=default, help=help)


def add_seed(parser: argparse.ArgumentParser, help: str = "seed of every random stream (default 0)") -> None:
    """``--seed N``, default 0."""
    parser.add_argument("--seed", type=int, default=0, help=help)


def add_threads(parser: argparse.ArgumentParser) -> None:
    """``--threads N``, default every core."""
    parser.add_argument("--threads", type=int, default=None, help="worker threads (default: every core)")


def add_race(parser: argparse.ArgumentParser) -> None:
    """``--race`` and its settings (``--race-delta``, ``--race-margin``, ``--race-batch``,
    ``--race-sequence``, ``--race-family-wise``): see :mod:`bbrl.analysis.racing`."""
    from ..analysis.race_defaults import DEFAULT_DELTA, DEFAULT_MARGIN, SEQUENCES

    group = parser.add_argument_group("racing (stop configurations that cheaper ones beat; docs/racing.md)")
    group.add_argument("--race", action="store_true", help="run each experiment as a race over batches of test MDPs")
    group.add_argument(
        "--race-delta",
        type=float,
        default=DEFAULT_DELTA,
        help=f"error level of each comparison (default {DEFAULT_DELTA})",
    )
    group.add_argument(
        "--race-margin",
        type=float,
        default=DEFAULT_MARGIN,
        help=f"plateau margin, in paired standard errors at N (default {DEFAULT_MARGIN})",
    )
    group.add_argument("--race-batch", type=int, default=None, help="test MDPs per batch (default: N/10, at least 10)")
    group.add_argument(
        "--race-sequence",
        choices=SEQUENCES,
        default=SEQUENCES[0],
        help=f"the confidence sequence (default {SEQUENCES[0]})",
    )
    group.add_argument(
        "--race-family-wise", action="store_true", help="split the error level over the experiment's comparisons"
    )


def race_options(args: argparse.Namespace) -> Any:
    """The :class:`~bbrl.analysis.racing.RaceOptions` of ``--race...``, or None without ``--race``."""
    if not getattr(args, "race", False):
        return None
    from ..analysis.racing import RaceOptions

    return RaceOptions(
        delta=args.race_delta,
        margin=args.race_margin,
        batch=args.race_batch,
        sequence=args.race_sequence,
        family_wise=args.race_family_wise,
    )


def add_gamma(parser: argparse.ArgumentParser, default: float, help: str | None = None) -> None:
    """``--gamma G``: the discount factor."""
    parser.add_argument(
        "--gamma", type=float, default=default, help=help or f"discount factor in [0, 1) (default {default})"
    )


def add_env(parser: argparse.ArgumentParser, state_space: str | None, help: str, required: bool = True) -> None:
    """``--env NAME``: a named environment of the registry (of one state space, ``"finite"`` or
    ``"box2"``, or any); any spelling the registry accepts (``mountain-car``) is taken."""
    from ..envs import registry

    choices = list(registry.names(state_space))
    parser.add_argument(
        "--env", required=required, type=env_name, choices=choices, help=f"{help}: {', '.join(choices)}"
    )


def env_name(value: str) -> str:
    """An environment name in the registry's spelling (an unknown name is returned as given, for
    argparse to name the choices)."""
    from ..envs import registry

    try:
        return registry.canonical(value)
    except ValueError:
        return value


def add_agent(parser: Any, required: bool = True) -> None:
    """``--agent KIND``: a built-in agent by its command-line name (``parser`` may be a group)."""
    # The core's registry, in the order of bbrl.agents.kinds(): the agents package (NumPy) is not
    # imported to build the parser.
    from .. import _core

    kinds = [entry["kind"] for entry in _core.agent_kinds()]
    parser.add_argument("--agent", required=required, help=f"agent: {', '.join(kinds)}")


def add_params(parser: argparse.ArgumentParser) -> None:
    """``--param NAME=VALUE``, repeatable: the agent's parameters (see :func:`parse_params`)."""
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="agent parameter (repeat)")


def add_protocol_options(parser: argparse.ArgumentParser, n_mdps: int) -> None:
    """The protocol's settings: ``--n-mdps``, ``--gamma``, ``--horizon``, ``--seed``, ``--threads``."""
    parser.add_argument("--n-mdps", type=int, default=n_mdps, help=f"test MDPs per experiment (default {n_mdps})")
    add_gamma(parser, 0.95)
    parser.add_argument(
        "--horizon",
        type=int,
        default=None,
        help="decisions per trajectory; default: the paper's formula with epsilon = 0.01 (193 on GC, 161 on GDL); "
        "the paper's experiments use 250",
    )
    add_seed(parser)
    add_threads(parser)


def parse_value(text: str) -> Any:
    """A ``--param`` value: ``true``/``false``, an int, a float, else the text."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def parse_params(pairs: Sequence[str]) -> dict[str, Any]:
    """``["epsilon=0.1", ...]`` to ``{"epsilon": 0.1, ...}``.

    Raises:
        ValueError: a pair without ``=`` or without a name.
    """
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param expects NAME=VALUE, got {pair!r}")
        params[key.strip()] = parse_value(value)
    return params


#: Suffixes that name a file, not a folder: ``--out x.csv`` of a command writing a folder is refused
#: (it would otherwise become a folder ``x.csv`` holding Parquet or text files).
FILE_SUFFIXES = (".csv", ".parquet", ".json", ".txt", ".toml", ".html", ".md", ".png", ".pdf", ".svg")


def output_dir(out: Path) -> Path:
    """The results folder of ``--out DIR``, created if missing; a data-file name (``x.csv``) that is
    not an existing folder, or an existing file, is refused before anything is written."""
    if out.suffix.lower() in FILE_SUFFIXES and not out.is_dir():
        raise ValueError(f"--out {out}: expected a folder, not a {out.suffix} file name (this command writes a folder)")
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: is a file, expected a folder")
    out.mkdir(parents=True, exist_ok=True)
    return out


def output_file(out: Path | None, name: str, old_suffix: str) -> Path | None:
    """The file a single-file command writes: ``out/name`` for a folder ``--out DIR`` (created if
    missing); a value ending in ``old_suffix`` is the deprecated ``--out FILE`` (warned about, its
    folder must exist); another file suffix (``.csv`` for a Parquet file) is refused."""
    if out is None:
        return None
    if out.suffix.lower() in FILE_SUFFIXES and out.suffix.lower() != old_suffix and not out.is_dir():
        raise ValueError(
            f"--out {out}: expected a folder, not a {out.suffix} file name (this command writes DIR/{name})"
        )
    if out.suffix.lower() == old_suffix:
        warn_deprecated(f"--out FILE ({out})", f"--out DIR (writes DIR/{name})")
        folder = out.parent if str(out.parent) else Path(".")
        if not folder.is_dir():
            raise FileNotFoundError(f"--out {out}: folder {str(folder)!r} does not exist")
        return out
    return output_dir(out) / name
