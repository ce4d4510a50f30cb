"""The one command-line convention, checked on the parser itself: every subcommand spells the shared
options the same way, and the old spellings still work with a warning."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from bbrl import value_error as ve
from bbrl.cli import build_parser, main
from bbrl.cli.options import DeprecatedAlias, env_name, finite, thread_count, whole

#: What each shared option is wherever it appears: dest, type, default (or None: any), metavar.
SHARED: dict[str, dict[str, object]] = {
    "--out": {"dest": "out", "type": Path, "metavar": "DIR"},
    "--seed": {"dest": "seed", "type": whole(0), "default": 0},
    "--threads": {"dest": "threads", "type": thread_count, "default": None, "metavar": "N"},
    "--gamma": {"dest": "gamma", "type": finite},
    "--env": {"dest": "env", "type": env_name},
    "--agent": {"dest": "agent", "type": None},
    "--param": {"dest": "param", "type": None, "default": []},
}
#: The subcommands that run work (experiments, evaluations, rollouts): each takes --threads.
RUNS_WORK = {
    ("run",), ("quick",), ("grid", "run"), ("paper",), ("replay",), ("value-error", "references"),
    ("value-error", "states"), ("value-error", "study"), ("replay-study",), ("regret-study",),
}  # fmt: skip
#: Those whose randomness a seed chooses: each takes --seed (default 0). A grid's seeds are in its file.
SEEDED = {
    ("run",), ("quick",), ("paper",), ("replay",), ("value-error", "references"), ("value-error", "states"),
    ("value-error", "study"), ("formulas",), ("replay-study",), ("regret-study",),
}  # fmt: skip
#: Old spellings kept one release, by subcommand: (old option, the new option's dest).
DEPRECATED = {("run",): ("--csv", "csv"), ("value-error", "references"): ("--discount", "gamma")}


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command that runs (a parser with a handler, or without subcommands), with its path of names."""
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers or parser.get_default("handler") is not None:
        yield path, parser
    for action in subparsers:
        for name, sub in action.choices.items():
            yield from _commands(sub, (*path, name))


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {option: action for action in parser._actions for option in action.option_strings}


COMMANDS = dict(_commands(build_parser()))


def test_the_walk_sees_every_subcommand() -> None:
    expected = {
        ("run",), ("quick",), ("grid", "run"), ("grid", "status"), ("grid", "plan"), ("grid", "submit"),
        ("grid", "task"), ("report",), ("export",), ("paper",), ("formulas",), ("agents",), ("agents", "convert"),
        ("distributions",),
        ("value-error", "references"), ("value-error", "states"), ("value-error", "study"), ("replay",), ("envs",),
        ("replay-study",), ("regret-study",),
    }  # fmt: skip
    assert set(COMMANDS) == expected


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_shared_options_are_spelled_one_way(path: tuple[str, ...]) -> None:
    options = _options(COMMANDS[path])
    for option, wanted in SHARED.items():
        action = options.get(option)
        if action is None:
            continue
        assert action.dest == wanted["dest"], (path, option)
        assert action.type == wanted["type"], (path, option)
        if "default" in wanted:
            assert action.default == wanted["default"], (path, option)
        if "metavar" in wanted:
            assert action.metavar == wanted["metavar"], (path, option)  # --out is a folder everywhere
    for old in ("--discount", "--csv"):
        if old in options:
            assert isinstance(options[old], DeprecatedAlias) and options[old].help == argparse.SUPPRESS, (path, old)


@pytest.mark.parametrize("path", sorted(RUNS_WORK), ids=" ".join)
def test_every_command_that_runs_work_takes_threads(path: tuple[str, ...]) -> None:
    assert "--threads" in _options(COMMANDS[path])


@pytest.mark.parametrize("path", sorted(SEEDED), ids=" ".join)
def test_seeded_commands_take_seed_with_default_0(path: tuple[str, ...]) -> None:
    action = _options(COMMANDS[path])["--seed"]
    assert action.default == 0 and not action.required


def test_no_command_spells_the_discount_otherwise() -> None:
    for path, parser in COMMANDS.items():
        visible = {o for o, a in _options(parser).items() if a.help != argparse.SUPPRESS}
        assert not visible & {"--discount", "--csv"}, path
        if any(isinstance(a, DeprecatedAlias) for a in _options(parser).values()):
            assert path in DEPRECATED


def _run_args(*extra: str) -> list[str]:
    return ["run", "--experiment", "GC", "--agent", "random", "--n-mdps", "4", "--horizon", "5", *extra]


def test_run_out_is_a_folder_and_csv_still_works(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_run_args("--out", str(tmp_path / "results"))) == 0
    new = pl.read_csv(tmp_path / "results" / "results.csv")
    assert "DeprecationWarning" not in capsys.readouterr().err
    assert main(_run_args("--csv", str(tmp_path / "old.csv"))) == 0
    assert "DeprecationWarning: --csv is deprecated, use --out DIR" in capsys.readouterr().err
    old = pl.read_csv(tmp_path / "old.csv")
    assert old["return"].to_list() == new["return"].to_list()


def _references(out: Path, *extra: str) -> list[str]:
    return [
        "value-error", "references", "--env", "mountain-car", "--states", "3", "--epsilon", "0.3", "--k", "5",
        "--out", str(out), *extra,
    ]  # fmt: skip


def test_value_error_writes_into_its_folder_and_the_old_spellings_warn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_references(tmp_path / "refs", "--gamma", "0.98", "--threads", "1")) == 0
    new = ve.References.load(tmp_path / "refs" / "references.parquet")
    assert new.params["env_discount"] == 0.98
    assert "DeprecationWarning" not in capsys.readouterr().err
    assert main(_references(tmp_path / "old.parquet", "--discount", "0.98")) == 0
    err = capsys.readouterr().err
    assert "DeprecationWarning: --discount is deprecated, use --gamma" in err
    assert "DeprecationWarning: --out FILE" in err
    old = ve.References.load(tmp_path / "old.parquet")
    assert old.params["env_discount"] == 0.98
    assert list(old.values) == list(new.values)


def test_formulas_seed_defaults_to_0_and_out_is_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["formulas", "--max-size", "2", "--out", str(tmp_path / "sets")]) == 0
    assert main(["formulas", "--max-size", "2", "--seed", "0", "--out", str(tmp_path / "F2.txt")]) == 0
    assert "DeprecationWarning: --out FILE" in capsys.readouterr().err
    assert (tmp_path / "sets" / "F2.txt").read_text() == (tmp_path / "F2.txt").read_text()


@pytest.mark.parametrize(
    "argv",
    [
        _references(Path("PLACEHOLDER") / "x.csv"),
        ["formulas", "--max-size", "2", "--out", str(Path("PLACEHOLDER") / "F2.csv")],
        _run_args("--out", str(Path("PLACEHOLDER") / "x.parquet")),
    ],
    ids=["value-error-references", "formulas", "run"],
)
def test_out_with_another_file_suffix_is_refused(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out x.csv`` of a command that writes Parquet (or text) into a folder: refused, nothing
    written under that name (before, a folder x.csv holding references.parquet)."""
    argv = [a.replace("PLACEHOLDER", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "expected a folder, not a " in err and "file name (this command writes DIR/" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["replay", "PLACEHOLDER/log.parquet", "--agent", "random", "--out", "PLACEHOLDER/x.csv"],
        ["quick", "--n-mdps", "2", "--out", "PLACEHOLDER/x.csv"],
    ],
    ids=["replay", "quick"],
)
def test_a_folder_command_refuses_a_file_name_for_out_before_it_runs(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out x.csv`` of a command that writes a results folder: refused at once, with nothing
    made (before, a folder named x.csv)."""
    argv = [a.replace("PLACEHOLDER", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "expected a folder, not a .csv file name" in err, err
    assert list(tmp_path.iterdir()) == []


#: A command line of each command with ``--out``, that would run if its ``--out`` were a good folder.
#: ``bbrl grid status`` reads its ``--out``; every other command writes there.
OUT_COMMANDS: dict[tuple[str, ...], list[str]] = {
    ("run",): _run_args(),
    ("quick",): ["quick", "--n-mdps", "2"],
    ("grid", "run"): ["grid", "run", "quick"],
    ("grid", "status"): ["grid", "status", "quick"],
    ("grid", "plan"): ["grid", "plan", "quick"],
    ("grid", "submit"): ["grid", "submit", "quick"],
    ("report",): ["report", "RESULTS"],
    ("export",): ["export", "RESULTS", "--format", "csv"],
    ("paper",): ["paper", "--quick"],
    ("formulas",): ["formulas", "--max-size", "2"],
    ("value-error", "references"): _references(Path("OUT"))[:-2],
    ("value-error", "states"): ["value-error", "states", "--env", "mountain-car", "--states", "2"],
    ("value-error", "study"): ["value-error", "study", "--quick"],
    ("replay",): ["replay", "RESULTS/log.parquet", "--agent", "random"],
    ("replay-study",): ["replay-study", "--quick"],
    ("regret-study",): ["regret-study", "--quick"],
}


#: The study commands: each regenerates a paper's experiments into a report folder.
STUDY_COMMANDS = (
    ["paper", "--quick"],
    ["replay-study", "--quick"],
    ["regret-study", "--quick"],
    ["value-error", "study", "--quick"],
)


@pytest.mark.parametrize("argv", STUDY_COMMANDS, ids=" ".join)
def test_every_study_command_defaults_its_out(argv: list[str]) -> None:
    """``bbrl value-error study --quick`` required --out where the other studies default it."""
    assert build_parser().parse_args(argv).out is None  # the command names its default folder


def test_every_command_with_out_is_in_the_out_sweep() -> None:
    assert set(OUT_COMMANDS) == {path for path, parser in COMMANDS.items() if "--out" in _options(parser)}


@pytest.mark.parametrize("path", sorted(OUT_COMMANDS), ids=" ".join)
@pytest.mark.parametrize("bad", ["a file", "/dev/null", "under a file", "/proc"])
def test_every_out_failure_is_one_line_naming_the_option_and_the_path(
    path: tuple[str, ...], bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An --out that cannot be a folder: before, FileExistsError and errno tracebacks (`grid run`,
    `report`, `paper`, `grid plan`), or an errno message that did not say which option it was."""
    if bad == "/proc" and not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    results = tmp_path / "results"
    results.mkdir()
    log = {
        "episode": [0, 0],
        "t": [0, 1],
        "state": [0, 1],
        "action": [0, 1],
        "reward": [1.0, 0.0],
        "next_state": [1, 0],
    }
    pl.DataFrame(log).write_parquet(results / "log.parquet")  # a good log: the --out is what fails
    plain = tmp_path / "plainfile"
    plain.write_text("mine\n")
    out = {"a file": plain, "/dev/null": Path("/dev/null"), "under a file": plain / "sub", "/proc": Path("/proc/x")}
    argv = [a.replace("RESULTS", str(results)) for a in OUT_COMMANDS[path]] + ["--out", str(out[bad])]
    before = sorted(tmp_path.rglob("*"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"bbrl: error: --out {out[bad]}: ") and err.count("\n") == 1, err
    assert sorted(tmp_path.rglob("*")) == before and plain.read_text() == "mine\n"


@pytest.mark.parametrize(
    "argv",
    [
        _run_args("--csv", "/proc/x.csv"),
        _run_args("--save-agent", "/proc/a.json"),
        _run_args("--out", "/proc/x.csv"),
        ["formulas", "--max-size", "2", "--out", "/proc/F2.txt"],
        _references(Path("/proc/r.parquet")),
    ],
    ids=["run-csv", "run-save-agent", "run-out-file", "formulas-out-file", "references-out-file"],
)
def test_a_file_option_in_a_folder_that_takes_no_file_names_the_option_before_it_runs(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: after the run, "[Errno 2] No such file or directory: '/proc/.x.csv.w-....tmp'"."""
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    option, path = argv[-2], argv[-1]
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if "DeprecationWarning" not in line]
    assert lines == [f"bbrl: error: {option} {path}: cannot write in '/proc': No such file or directory"], captured.err
    assert "±" not in captured.out  # refused before the run
