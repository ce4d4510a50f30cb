"""The machinery of the input sweep (test_input_sweep.py): every option of every command, and every
parameter of every agent kind and environment, given hostile values.

A value is hostile when it is negative, zero, huge, not a number, infinite, of the wrong type or
empty (:data:`HOSTILE`). The command line is walked through its parser (:func:`commands`), so that
an option is swept the day it is added; a command line runs in-process (:func:`run_in_process`) or,
with ``BBRL_SWEEP_SUBPROCESS=1``, as ``python -m bbrl`` in a subprocess of its own
(:func:`run_in_subprocess`), where an abort ends only that case. :func:`check_cli` states what an
outcome may be: exit 0, or exit 2 with one line on standard error naming the option; never a
traceback, a Rust panic, an abort, a hang, or nonsense accepted in silence.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import re
import resource
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The environment switch: every command-line case as ``python -m bbrl`` in a subprocess of its own.
SUBPROCESS = os.environ.get("BBRL_SWEEP_SUBPROCESS", "").strip().lower() not in ("", "0", "false", "no")

#: The hostile values of an option, as command-line text, by label (the label is in each case's id).
HOSTILE: tuple[tuple[str, str], ...] = (
    ("negative", "-1"),
    ("zero", "0"),
    ("huge", str(10**12)),
    ("huger", str(10**30)),
    ("nan", "nan"),
    ("inf", "inf"),
    ("-inf", "-inf"),
    ("word", "x"),
    ("fraction", "1.5"),
    ("empty", ""),
)

#: The same values as Python objects, for the Python API (a fraction is also given as text there:
#: "1.5" where a number is expected is a value of the wrong type).
HOSTILE_PY: tuple[tuple[str, Any], ...] = (
    ("negative", -1),
    ("zero", 0),
    ("huge", 10**12),
    ("huger", 10**30),
    ("nan", math.nan),
    ("inf", math.inf),
    ("-inf", -math.inf),
    ("word", "x"),
    ("fraction", 1.5),
    ("fraction-text", "1.5"),
    ("empty", ""),
)

#: Labels of the values that no count, size, rate or probability means: accepting one of them for a
#: numeric option whose help (or range) does not give it a meaning is nonsense accepted in silence.
NONSENSE = frozenset({"negative", "nan", "inf", "-inf"})

#: Seconds a case may run before it counts as a hang (a case's sizes are tiny: it takes well under
#: a second when it runs at all).
TIMEOUT = float(os.environ.get("BBRL_SWEEP_TIMEOUT", "60"))

#: The address space of a case run in a subprocess: an allocation the size of the machine fails at
#: once there (and aborts the case) instead of swapping the shared machine.
SUBPROCESS_MEMORY = 8 * 2**30


# -- the parser walk ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """A command of the parser: its path of names (``("grid", "run")``), its parser, and the
    actions a user can give (options and positionals; not --help, not the subcommand choice)."""

    path: tuple[str, ...]
    parser: argparse.ArgumentParser
    actions: tuple[argparse.Action, ...]


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[Command]:
    """Every parser under ``parser``, depth first, with the actions it takes itself.

    argparse has no public way to list a parser's arguments or reach its subparsers: its
    ``_actions`` list and the ``_SubParsersAction`` class are private names of the standard
    library, read here (and only in tests) because walking the real parser is what makes an
    option added tomorrow part of the sweep without anyone listing it."""
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    own = tuple(a for a in parser._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)))
    yield Command(path, parser, own)
    for action in subparsers:
        for name, sub in action.choices.items():
            yield from commands(sub, (*path, name))


def is_flag(action: argparse.Action) -> bool:
    """An option that takes no value (``--race``, ``--no-hardness``, ``--version``)."""
    return action.nargs == 0


def is_numeric(action: argparse.Action) -> bool:
    return action.type in (int, float)


def names_of(action: argparse.Action) -> list[str]:
    """How an error may name ``action``: any of its flags, its dest, its metavar."""
    found = [*action.option_strings, action.dest]
    if isinstance(action.metavar, str):
        found.append(action.metavar)
    return [n for n in found if n and n != argparse.SUPPRESS]


def key_of(action: argparse.Action) -> str:
    """The option's name in case ids: its first long flag, or a positional's dest."""
    longs = [o for o in action.option_strings if o.startswith("--")]
    return (longs or list(action.option_strings) or [action.dest])[0]


def with_value(baseline: Sequence[str], command: Command, action: argparse.Action, value: str) -> list[str]:
    """``baseline`` (a command line of ``command``: options, then ``--``, then its positionals in
    the parser's order) with ``action`` set to ``value``: a positional is replaced in place; an
    option's occurrence is replaced, or the option appended, always as ``--flag=value`` (so that
    ``-inf`` is read as the option's value, not as an option)."""
    argv = list(baseline)
    split = argv.index("--") if "--" in argv else len(argv)
    options, positionals = argv[:split], argv[split + 1 :]
    if not action.option_strings:
        positionals[[a for a in command.actions if not a.option_strings].index(action)] = value
        return [*options, "--", *positionals]
    flag = key_of(action)
    setting = flag if is_flag(action) else f"{flag}={value}"
    for i, token in enumerate(options):
        if token in action.option_strings:
            options[i : i + (1 if is_flag(action) else 2)] = [setting]
            break
        if any(token.startswith(f"{o}=") for o in action.option_strings):
            options[i] = setting
            break
    else:
        options.append(setting)
    return [*options, "--", *positionals] if "--" in argv else options


# -- running a command line ---------------------------------------------------------------------


@dataclass
class Outcome:
    """What a command line did: its exit code (None: it did not end), its output, and the
    exception that left ``main`` (in-process) or the signal that ended it (subprocess)."""

    argv: list[str]
    code: int | None
    stdout: str = ""
    stderr: str = ""
    error: BaseException | None = None
    signal: int | None = None
    timed_out: bool = False

    def first_line(self) -> str:
        """The first line that tells what happened (for reports)."""
        if self.timed_out:
            return f"no end after {TIMEOUT:g} s"
        if self.error is not None:
            return f"{type(self.error).__name__}: {str(self.error).splitlines()[0] if str(self.error) else ''}"
        for line in self.stderr.splitlines():
            if line.strip() and not line.startswith("usage:") and not line.startswith(" "):
                return line.strip()
        return self.stderr.strip().splitlines()[0] if self.stderr.strip() else f"exit {self.code}"


class _Hung(BaseException):
    """Raised into a case's thread when it outlives its time (not an exception ``main`` handles)."""


def _raise_in(thread: threading.Thread, exc: type[BaseException]) -> None:
    """Asks ``thread`` to raise ``exc`` at its next bytecode (CPython's documented C API, reached
    through ctypes: the only way to stop a Python thread from outside). A thread inside a Rust
    call sees it when the call returns (a cancellable call returns at once: bbrl.cancellable)."""
    if thread.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(exc))


def run_in_process(argv: Sequence[str], capfd: Any, timeout: float = TIMEOUT) -> Outcome:
    """``bbrl.cli.main(argv)`` in a worker thread, bounded by ``timeout``; ``capfd`` (pytest's
    fixture) captures file descriptors 1 and 2, so that a message the Rust core writes there
    itself (a panic's) is seen too. Not in the main thread, ``main`` installs no signal handler
    (pytest's stay) and runs the command directly, as it does in a thread of a user's program.
    Warnings are shown as the command line shows them, not raised (pytest's setting here)."""
    from bbrl.cli import main

    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["code"] = main(list(argv))
        except SystemExit as exc:  # argparse's errors and --version
            outcome["code"] = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
            if not isinstance(exc.code, int) and exc.code is not None:
                print(exc.code, file=sys.stderr)
        except BaseException as exc:
            outcome["error"] = exc

    capfd.readouterr()
    shown = warnings.showwarning
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        worker = threading.Thread(target=target, name="bbrl-sweep-case", daemon=True)
        worker.start()
        worker.join(timeout)
        hung = worker.is_alive()
        if hung:
            _raise_in(worker, _Hung)
            worker.join(10)
    warnings.showwarning = shown  # main() sets the command line's one-line warnings
    captured = capfd.readouterr()
    error = outcome.get("error")
    return Outcome(
        list(argv),
        None if hung else outcome.get("code", 2 if error is not None else 0),
        captured.out,
        captured.err,
        None if isinstance(error, _Hung) else error,
        timed_out=hung,
    )


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (SUBPROCESS_MEMORY, SUBPROCESS_MEMORY))


def run_in_subprocess(
    argv: Sequence[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = TIMEOUT
) -> Outcome:
    """``python -m bbrl argv`` in a subprocess of its own (an abort ends only this case), its
    address space limited (:data:`SUBPROCESS_MEMORY`), bounded by ``timeout``."""
    command = [sys.executable, "-m", "bbrl", *argv]
    full_env = {**os.environ, "PYTHONFAULTHANDLER": "", **(env or {})}
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=_limit_memory,
            errors="replace",
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return Outcome(list(argv), None, out, err, timed_out=True)
    signal_number = -done.returncode if done.returncode < 0 else None
    return Outcome(list(argv), done.returncode, done.stdout, done.stderr, signal=signal_number)


# -- what an outcome may be ---------------------------------------------------------------------

#: The marks of a crash in a command's output, whatever its exit code.
CRASH_MARKS = ("Traceback (most recent call last)", "panicked at", "memory allocation of", "fatal runtime error")

#: Lines of standard error that are not the error: the command line's warnings and notices.
_NOTICE = re.compile(r"^(bbrl: \w*Warning: |BBRL_SMOKE is set: )")


def error_lines(stderr: str) -> list[str]:
    """The lines of ``stderr`` that make the error: argparse's usage (``usage:`` and its indented
    continuation lines) and the command line's warnings left out."""
    lines = []
    in_usage = False
    for line in stderr.splitlines():
        if line.startswith("usage:"):
            in_usage = True
            continue
        if in_usage and (line.startswith(" ") or not line.strip()):
            continue
        in_usage = False
        if line.strip() and not _NOTICE.match(line):
            lines.append(line)
    return lines


def names_one_of(message: str, names: Sequence[str]) -> bool:
    """Whether ``message`` names one of ``names`` as a word (``k`` in "k must be >= 1", not in "keep")."""
    return any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", message) for n in names)


def problems(outcome: Outcome, names: Sequence[str], nonsense: bool, long_ok: bool = False) -> list[str]:
    """What is wrong with ``outcome`` (empty: nothing), for a case whose value is nonsense when
    ``nonsense`` (accepting it is a failure), whose error must name one of ``names``, and which may
    still be running when its time is up when ``long_ok`` (a valid huge size)."""
    found = []
    text = outcome.stdout + outcome.stderr
    if outcome.timed_out:
        if not long_ok:
            found.append(f"hangs: no end after {TIMEOUT:g} s")
    elif outcome.error is not None:
        found.append(f"raises {type(outcome.error).__name__} out of main: {outcome.error}")
    elif outcome.signal is not None:
        found.append(f"killed by signal {outcome.signal}")
    elif outcome.code not in (0, 2):
        found.append(f"exit code {outcome.code}")
    for mark in CRASH_MARKS:
        if mark in text:
            found.append(f"prints {mark!r}")
    if outcome.code == 2 and outcome.error is None:
        lines = error_lines(outcome.stderr)
        if len(lines) != 1:
            found.append(f"an error of {len(lines)} lines, not one: {lines[:3]}")
        elif not names_one_of(lines[0], names):
            found.append(f"an error naming none of {list(names)}: {lines[0]!r}")
    if outcome.code == 0 and nonsense:
        found.append("nonsense accepted in silence (exit 0)")
    return found


# -- the Python API -----------------------------------------------------------------------------


@dataclass
class Call:
    """What a Python API call did: returned (``raised`` None), or raised ``raised`` with ``message``."""

    raised: str | None = None
    message: str = ""
    is_documented: bool = False
    signal: int | None = None
    timed_out: bool = False
    output: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def first_line(self) -> str:
        if self.timed_out:
            return f"no end after {TIMEOUT:g} s"
        if self.signal is not None:
            lines = [line for line in self.output.splitlines() if line.strip()]
            return f"signal {self.signal}: {lines[0] if lines else ''}"
        if self.raised is None:
            return "returned"
        return f"{self.raised}: {self.message.splitlines()[0] if self.message else ''}"


def call(function: Callable[[], Any]) -> Call:
    """Runs ``function``: a ValueError or TypeError (or a subclass) is a documented refusal; any
    other exception (OverflowError, IndexError, the core's PanicException) is recorded as raised,
    undocumented."""
    try:
        function()
    except (ValueError, TypeError) as exc:
        return Call(type(exc).__name__, str(exc), is_documented=True)
    except Exception as exc:
        return Call(type(exc).__name__, str(exc))
    except BaseException as exc:  # pyo3's PanicException derives from BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return Call(type(exc).__name__, str(exc))
    return Call()


def call_problems(result: Call, names: Sequence[str], nonsense: bool) -> list[str]:
    """What is wrong with a Python API call (empty: nothing): see :func:`problems`."""
    if result.timed_out:
        return [f"hangs: no end after {TIMEOUT:g} s"]
    if result.signal is not None:
        return [f"killed by signal {result.signal}: {result.first_line()}"]
    found = [f"prints {m!r}" for m in CRASH_MARKS if m in result.output]
    if result.raised is None:
        if nonsense:
            found.append("nonsense accepted in silence (it returned)")
        return found
    if not result.is_documented:
        found.append(f"raises {result.raised}, not a ValueError or TypeError: {result.message}")
    elif "\n" in result.message.strip():
        found.append(f"a message of several lines: {result.message!r}")
    elif not names_one_of(result.message, names):
        found.append(f"a message naming none of {list(names)}: {result.message!r}")
    return found


def call_in_subprocess(spec: dict[str, Any], timeout: float = TIMEOUT) -> Call:
    """The Python API case ``spec`` (see :func:`run_api_spec`) in a subprocess of its own, for a
    call that may abort the process."""
    here = str(Path(__file__).resolve().parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    code = "import sys, json, _sweep; _sweep.api_child(json.loads(sys.argv[1]))"
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, json.dumps(spec)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=_limit_memory,
            errors="replace",
        )
    except subprocess.TimeoutExpired:
        return Call(timed_out=True)
    if done.returncode < 0:
        return Call(signal=-done.returncode, output=done.stderr)
    lines = [line for line in done.stdout.splitlines() if line.startswith("SWEEP-RESULT ")]
    if done.returncode != 0 or not lines:
        return Call(
            "ChildFailure", done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "", output=done.stderr
        )
    result = json.loads(lines[-1][len("SWEEP-RESULT ") :])
    return Call(result["raised"], result["message"], result["is_documented"], output=done.stderr)


def decode(value: Any) -> Any:
    """A value of :data:`HOSTILE_PY` back from JSON (floats that JSON cannot hold are tagged)."""
    if isinstance(value, dict) and "float" in value:
        return float(value["float"])
    if isinstance(value, dict) and "int" in value:
        return int(value["int"])
    return value


def encode(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
        return {"int": str(value)}
    return value


def run_api_spec(spec: dict[str, Any]) -> Call:
    """Runs one Python API case described as data (so that it also runs in a child process):
    ``{"what": "agent", "kind", "params", "build": bool, "check": [n_states, n_actions, gamma,
    horizon] or None}`` or ``{"what": "env", "name", "options", "experiment": bool}``."""
    params = {k: decode(v) for k, v in spec.get("params", spec.get("options", {})).items()}
    if spec["what"] == "agent":
        return call(lambda: agent_case(spec["kind"], params, spec["build"], spec.get("check")))
    return call(lambda: env_case(spec["name"], params, spec["experiment"]))


def agent_case(kind: str, params: dict[str, Any], build: bool, check: list[Any] | None) -> None:
    """An agent of ``kind`` (``params`` by the registry's names): made through the public API
    (:func:`bbrl.agents.create`, the record's field names), its memory checked by
    ``bbrl._core.check_agent`` when ``check`` gives the task's sizes, and trained on a tiny task
    when ``build``."""
    from dataclasses import fields

    from bbrl import _core, agents

    entry = agents.spec(kind)
    field_of = {p["name"]: f.name for p, f in zip(entry["params"], fields(agents.kinds()[kind]), strict=True)}
    if check is not None:
        _core.check_agent(kind, params, *check)
    spec = agents.create(kind, {field_of[k]: v for k, v in params.items()})
    if build:
        spec.train("GC", 0.95, 2, 0)


def env_case(name: str, options: dict[str, Any], experiment: bool) -> None:
    """Environment ``name`` with ``options``: built through :func:`bbrl.envs.make` (a finite one)
    or the registry's builder (a continuous one), and an :class:`bbrl.EpisodicExperiment` on it
    with the same options when ``experiment``."""
    import bbrl
    from bbrl.envs import registry

    entry = registry.entry(name)
    if entry["state_space"] == "finite":
        options = dict(options)
        discount = options.pop("discount", None)
        bbrl.envs.make(name, discount, **options) if discount is not None else bbrl.envs.make(name, **options)
        if experiment:
            bbrl.EpisodicExperiment(
                name,
                episodes=1,
                n_runs=1,
                horizon=2,
                env_options={**options, **({} if discount is None else {"discount": discount})},
            )
    else:
        registry.make_core(name, **options)


def api_child(spec: dict[str, Any]) -> None:
    """The child process of :func:`call_in_subprocess`: runs the case, prints its result."""
    result = run_api_spec(spec)
    print(
        "SWEEP-RESULT "
        + json.dumps({"raised": result.raised, "message": result.message, "is_documented": result.is_documented})
    )
    sys.stdout.flush()


# -- documented ranges --------------------------------------------------------------------------

_INTERVAL = re.compile(r"^\s*([\[\(])\s*(\S+?)\s*,\s*(\S+?)\s*([\]\)])\s*$")
_BOUND = re.compile(r"^\s*(>=|>|<=|<)\s*(\S+)\s*$")


def in_documented_range(value: Any, param: dict[str, Any]) -> bool | None:
    """Whether ``value`` is in the documented range of registry parameter ``param``: its typed
    keys (``min``, ``max``, ``min_inclusive``, ``max_inclusive``, ``choices``) when it has them,
    else its ``range`` text (``[0, 1]``, ``> 0``, ``>= 1``); None when neither says."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and math.isnan(value):
        return False
    if "min" in param or "max" in param:
        lo, hi = param.get("min"), param.get("max")
        if lo is not None and (value < lo or (value == lo and not param.get("min_inclusive", True))):
            return False
        return not (hi is not None and (value > hi or (value == hi and not param.get("max_inclusive", True))))
    text = str(param.get("range", ""))
    interval = _INTERVAL.match(text)
    if interval:
        left, lo, hi, right = interval.groups()
        lo_v, hi_v = float(lo), float(hi)
        return (lo_v < value or (left == "[" and value == lo_v)) and (value < hi_v or (right == "]" and value == hi_v))
    bound = _BOUND.match(text)
    if bound:
        op, limit = bound.groups()
        limit_v = float(limit)
        return {">=": value >= limit_v, ">": value > limit_v, "<=": value <= limit_v, "<": value < limit_v}[op]
    return None
