"""The options every ``bbrl`` subcommand shares, defined once, and the one command-line convention.

* ``--out DIR``: a results folder (created if missing); a command that writes one file writes it
  inside (``run``: DIR/results.csv, ``value-error references``: DIR/references.parquet,
  ``formulas``: DIR/F<n>.txt).
* ``--seed N``: the seed of every random stream, default 0.
* ``--threads N``: worker threads (default: every core), on every subcommand that runs work; a
  whole number >= 1, never more threads than work items, a one-line warning above the cores.
* ``--gamma G``: the discount factor.
* ``--env NAME``: a named environment.
* ``--agent KIND`` and ``--param NAME=VALUE`` (repeatable): a built-in agent and its parameters.

Every ``--out`` failure (an existing file, a folder that cannot be created or written) is a
one-line error naming the option and the path (:func:`output_dir`, :func:`check_output_dir`).

Old spellings (``--discount``, ``--csv FILE``, ``--out FILE``) still work for one release: they
print a deprecation warning on stderr (:func:`warn_deprecated`).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
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
    "check_output_dir",
    "env_name",
    "new_output_dir",
    "output_dir",
    "output_file",
    "output_file_path",
    "parse_params",
    "parse_value",
    "thread_count",
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
    parser.add_argument("--seed", type=whole(0), default=0, help=help)


@functools.cache
def whole(minimum: int = 0) -> Callable[[str], int]:
    """An argparse type: a whole number >= ``minimum``; anything else is argparse's usage error
    naming the option (exit 2) before any work (``--max-size -1``, ``--n-mdps 1.5``). Every integer
    option of the command line takes one, so a finer check downstream sees a whole number; one
    parser per minimum (cached), so that an option has the same type wherever it appears."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    parse.__name__ = f"whole number >= {minimum}"
    return parse


def finite(text: str) -> float:
    """An argparse type: a finite number (``nan`` and ``inf`` are refused by name, exit 2); the
    option's range is checked where it is used, with a message naming it."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


#: The type of ``--threads``: a whole number >= 1, refused by argparse naming the option before any
#: work. The rest of the rule (never more threads than work items, a one-line warning above the
#: cores) is the library's: :mod:`bbrl.threads`.
thread_count = whole(1)


def add_threads(parser: argparse.ArgumentParser) -> None:
    """``--threads N``, default every core."""
    parser.add_argument(
        "--threads",
        type=thread_count,
        default=None,
        metavar="N",
        help="worker threads, at most one per work item (default: every core)",
    )


def add_race(parser: argparse.ArgumentParser) -> None:
    """``--race`` and its settings (``--race-delta``, ``--race-margin``, ``--race-batch``,
    ``--race-sequence``, ``--race-family-wise``): see :mod:`bbrl.analysis.racing`."""
    from ..analysis.race_defaults import DEFAULT_DELTA, DEFAULT_MARGIN, SEQUENCES

    group = parser.add_argument_group("racing (stop configurations that cheaper ones beat; docs/racing.md)")
    group.add_argument("--race", action="store_true", help="run each experiment as a race over batches of test MDPs")
    group.add_argument(
        "--race-delta",
        type=finite,
        default=DEFAULT_DELTA,
        help=f"error level of each comparison (default {DEFAULT_DELTA})",
    )
    group.add_argument(
        "--race-margin",
        type=finite,
        default=DEFAULT_MARGIN,
        help=f"plateau margin, in paired standard errors at N (default {DEFAULT_MARGIN})",
    )
    group.add_argument(
        "--race-batch", type=whole(1), default=None, help="test MDPs per batch (default: N/10, at least 10)"
    )
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
        "--gamma", type=finite, default=default, help=help or f"discount factor in [0, 1) (default {default})"
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


def add_agent_file_options(parser: argparse.ArgumentParser) -> None:
    """``--agent-class FILE.py:CLASS`` and ``--allow-pickle``: how an agent file's Python agent is
    read (see :func:`load_agent_file`)."""
    parser.add_argument(
        "--agent-class",
        default=None,
        metavar="FILE.py:CLASS",
        help="the class of a Python agent in the agent file ('file.py:Class' or 'module:Class'): reading an agent "
        "file never imports a module it names",
    )
    parser.add_argument(
        "--allow-pickle",
        action="store_true",
        help="read an agent file of bbrl's earlier format (pickles), which runs any code it holds (trusted files only)",
    )


def load_agent_file(path: Path, args: argparse.Namespace) -> Any:
    """The trained agent of ``path`` with the options of :func:`add_agent_file_options`."""
    from ..agents import load
    from ..grid.classes import load_python_agent_class

    agent_class = None if args.agent_class is None else load_python_agent_class(args.agent_class, Path.cwd())
    return load(path, agent_class, allow_pickle=args.allow_pickle)  # with pickles, load() warns


def add_params(parser: argparse.ArgumentParser) -> None:
    """``--param NAME=VALUE``, repeatable: the agent's parameters (see :func:`parse_params`)."""
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="agent parameter (repeat)")


def add_protocol_options(parser: argparse.ArgumentParser, n_mdps: int) -> None:
    """The protocol's settings: ``--n-mdps``, ``--gamma``, ``--horizon``, ``--seed``, ``--threads``."""
    parser.add_argument("--n-mdps", type=whole(1), default=n_mdps, help=f"test MDPs per experiment (default {n_mdps})")
    add_gamma(parser, 0.95)
    parser.add_argument(
        "--horizon",
        type=whole(1),
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


def check_output_dir(out: Path, option: str = "--out") -> Path:
    """Refuses, before anything runs or is written, a value of ``option`` that cannot be a folder:
    a data-file name (``x.csv``) that is not an existing folder, or anything that exists and is not
    a folder (a file, ``/dev/null``). Creates nothing (for a dry run).

    Raises:
        ValueError: naming the option and the path.
    """
    if out.suffix.lower() in FILE_SUFFIXES and not out.is_dir():
        raise ValueError(
            f"{option} {out}: expected a folder, not a {out.suffix} file name (this command writes a folder)"
        )
    if out.is_file():
        raise ValueError(f"{option} {out}: is a file, expected a folder")
    if out.exists() and not out.is_dir():
        raise ValueError(f"{option} {out}: exists and is not a folder")
    return out


def output_dir(out: Path, option: str = "--out") -> Path:
    """The results folder of ``--out DIR`` (or of ``option``), created if missing, after
    :func:`check_output_dir`; every command that writes a folder calls it before it starts.

    Raises:
        ValueError: naming the option and the path, when it cannot be a folder, cannot be created
            (no such parent, no permission, a read-only file system) or is not writable.
    """
    check_output_dir(out, option)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a parent is a file
        raise ValueError(f"{option} {out}: cannot create the folder: a parent folder is a file") from None
    except OSError as exc:
        raise ValueError(f"{option} {out}: cannot create the folder: {exc.strerror or exc}") from None
    _check_writable(out, option, out)
    return out


def _check_writable(folder: Path, option: str, given: Path) -> None:
    """Refuses a folder in which no file can be made (no permission, a read-only file system,
    ``/proc``), by making one that vanishes on closing: permission bits alone do not tell (root
    ignores them, a read-only mount keeps them)."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        where = "" if folder == given else f" in {str(folder)!r}"
        raise ValueError(f"{option} {given}: cannot write{where}: {exc.strerror or exc}") from None


def output_file_path(path: Path, option: str) -> Path:
    """A file an option names (``--csv FILE``, ``--save-agent FILE``, the deprecated ``--out FILE``),
    checked before anything runs: its folder exists and takes files, and it is not a folder.

    Raises:
        FileNotFoundError: the folder does not exist (naming the option and the path).
        ValueError: the path is a folder, or the folder takes no file.
    """
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise FileNotFoundError(f"{option} {path}: folder {str(folder)!r} does not exist")
    if path.is_dir():
        raise ValueError(f"{option} {path}: is a folder, expected a file name")
    _check_writable(folder, option, path)
    return path


@contextlib.contextmanager
def new_output_dir(out: Path, option: str = "--out") -> Iterator[Path]:
    """:func:`output_dir` for a command that may still fail before it writes there (e.g. a report
    of a folder without results): a folder made here and still empty when the command fails is
    removed again, so that a refused command leaves nothing behind."""
    made = not out.exists()
    output_dir(out, option)
    try:
        yield out
    except BaseException:
        if made:
            with contextlib.suppress(OSError):
                out.rmdir()  # only when empty: files already written stay
        raise


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
        return output_file_path(out, "--out")
    return output_dir(out) / name
