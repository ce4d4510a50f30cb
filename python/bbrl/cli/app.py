"""The ``bbrl`` command line: the parser of every subcommand, and running one with signals handled.

Each subcommand is a module of this package with ``register(commands)``, which adds its parser to
``commands`` (the ``add_subparsers`` object) with ``set_defaults(handler=f)``, where
``f(args, console)`` runs the command. A new command is its module and one entry in
:data:`SUBCOMMANDS`. The options they share are :mod:`bbrl.cli.options`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .. import stopping
from . import (
    export,
    formulas,
    grid,
    listings,
    paper,
    quick,
    regret_study,
    replay,
    replay_study,
    report,
    run,
    value_error,
)

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["SUBCOMMANDS", "build_parser", "main"]

#: The subcommand modules, in the order of ``bbrl --help``.
SUBCOMMANDS = (
    run,
    quick,
    grid,
    report,
    export,
    paper,
    formulas,
    listings,
    value_error,
    replay,
    replay_study,
    regret_study,
)

EXAMPLES = """\
examples:
  bbrl run --experiment GC --prior GC --agent egreedy --param epsilon=0.1 --n-mdps 500 --seed 0
  bbrl run --experiment Grid --prior UGrid --agent beb --param beta=1 --param compat=true --horizon 250
  bbrl run --experiment GC --prior UGC --agent oppsds --param formula_set=F3 --param n_draws=1000 --save-agent opps.json
  bbrl run --experiment GC --agent-file opps.json --n-mdps 500 --out results
  bbrl paper --quick                      # the paper's study, small: runs examples/quick.toml and its report
  bbrl grid run examples/quick.toml --out results --shard 1/2
  bbrl grid status results
  bbrl grid run examples/quick.toml --out results --scheduler tcp://10.0.0.5:8786   # on a Dask cluster
  bbrl grid plan paper-accurate --target-hours 12 --out results
  bbrl grid submit paper-accurate --out results --partition cpu --time 04:00:00 --watch   # SLURM
  bbrl report results --out report
  bbrl export results --format rliable    # results/export/rliable.npz for rliable (also adastop, csv)
  bbrl quick --out bbrl-quick
  bbrl formulas --max-size 6 --seed 0 --out formulas
  bbrl value-error references --env mountain-car --states 100 --out refs
  bbrl agents
"""


class _Version(argparse.Action):
    """``--version``, whose version is read when asked: reading the installed package's metadata
    (importlib.metadata) is a sixth of what ``bbrl --help`` costs."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: object, values: object, option_string: object = None
    ) -> None:
        from ..version import __version__

        print(f"bbrl {__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``bbrl`` command and every subcommand."""
    parser = argparse.ArgumentParser(
        prog="bbrl",
        description="Benchmark Bayesian RL agents on Dirichlet (FDM) distributions of MDPs (BBRL protocol).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version, help="show program's version number and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(commands)
    return parser


class _Stopped(BaseException):
    """SIGTERM turned into an exception in the main thread."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, _frame: object) -> None:
    raise _Stopped(signum)


def _run_command(handler: Callable[[argparse.Namespace, Console], int], args: argparse.Namespace, console: Console):
    """Runs the command in a worker thread while the main thread waits for it.

    Python runs signal handlers only in the main thread and only between bytecodes: a long Rust
    call made from the main thread would hold a Ctrl-C until it returns. Here the main thread only
    waits, so SIGINT and SIGTERM are seen at once.
    """
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["code"] = handler(args, console)
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=target, name="bbrl-command", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(timeout=0.05)
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("code", 0)


def _kept(args: argparse.Namespace) -> str:
    """What a stop keeps, as the command states it (``set_defaults(kept=...)``, e.g. a grid's
    finished cells), else what this process wrote (every file is written whole, atomically)."""
    from ..fileio import files_written

    kept = getattr(args, "kept", None)
    if kept is not None:
        return str(kept).format(out=getattr(args, "out", None))
    n = files_written()
    return "no results were written" if n == 0 else f"the {n} file(s) written before the stop are kept, each whole"


def _stop_now(console: Console, code: int, what: str, kept: str) -> None:
    """Ends the process at once: finished results are already on disk (each written atomically),
    the work in flight is abandoned, and what must not outlive the process (a cell's claim, a
    pool of worker processes) is undone first (:mod:`bbrl.stopping`). ``os._exit`` does not wait
    for the worker threads still inside a Rust call (waiting for them at interpreter exit is what
    aborted the process before)."""
    if console.is_terminal:
        console.show_cursor(True)
    stopping.undo_all()
    print(f"\nbbrl: {what}; stopped: {kept}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as the command line prints it: one line naming its kind, not the code that raised it."""
    print(f"bbrl: {category.__name__}: {message}", file=file or sys.stderr)


#: The thread counts the command line sets to 1 when the user has not set them, by the library
#: that reads them when it loads: NumPy's BLAS and polars' thread pool.
_ONE_THREAD = {"numpy": ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"), "polars": ("POLARS_MAX_THREADS",)}


def _one_thread_pools() -> None:
    """Makes NumPy's BLAS and polars single-threaded, unless the user chose otherwise or the
    library is already loaded (each reads its count at load). The command line's own NumPy and
    polars work is small (the statistics, fits and tables of a report, a grid's bookkeeping),
    where the agents' hot loops run in the core on threads of its own: a multi-threaded OpenBLAS's
    workers spin after each call and cost a report about a tenth of its CPU time, and polars'
    hand-offs to its pool doubled the CPU time of the report's small queries."""
    for library, names in _ONE_THREAD.items():
        if library not in sys.modules:
            for name in names:
                os.environ.setdefault(name, "1")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _one_thread_pools()
    from rich.console import Console  # once a command runs: --help and --version exit before

    warnings.showwarning = _one_line_warning
    console = Console()
    if not console.is_terminal:
        # Piped or captured output: do not wrap the table at 80 columns, and send each line at once
        # (a pipe is block-buffered: a stop would lose the lines printed so far, header included).
        console = Console(width=200)
        if hasattr(sys.stdout, "reconfigure"):
            sys.stdout.reconfigure(line_buffering=True)
    in_main_thread = threading.current_thread() is threading.main_thread()
    if in_main_thread:
        # Also when the shell started us with SIGINT ignored (a background job of a script), so that
        # `kill -INT` stops a run as Ctrl-C does.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        if not in_main_thread:
            return args.handler(args, console)
        return _run_command(args.handler, args, console)
    except (ValueError, TypeError, OSError) as exc:
        # OSError: a file or folder the command could not read or write (its message names it).
        print(f"bbrl: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _stop_now(console, 128 + signal.SIGINT, "interrupted (SIGINT)", _kept(args))
    except _Stopped as stop:
        _stop_now(console, 128 + stop.signum, f"terminated ({signal.Signals(stop.signum).name})", _kept(args))
    return 0  # not reached: _stop_now exits
