"""Every reader of a file the user names says what a path that is not a regular file is (a
directory, a FIFO, a character device) and says "not found" only for a missing path; a FIFO is
never opened (reading one waits for a writer)."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bbrl import agents, distributions, fileio, grid, replay
from bbrl.analysis.cost import load_calibration
from bbrl.episodic.results import SETTINGS_FILE, read_results
from bbrl.protocol import results
from bbrl.value_error import References

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")


def _error(call: Callable[[], Any], fifo: Path) -> BaseException:
    """What ``call`` raises; a call still waiting after 10 s (it opened the FIFO) is released by
    opening the FIFO's other end, and fails the test."""
    found: dict[str, BaseException] = {}

    def target() -> None:
        try:
            call()
        except BaseException as exc:  # handed to the test
            found["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the waiting reader gets end-of-file
        thread.join(10)
        pytest.fail("the reader opened the FIFO and waited for a writer")
    assert "error" in found, "nothing was raised"
    return found["error"]


@pytest.fixture
def paths(tmp_path: Path) -> dict[str, Path]:
    folder = tmp_path / "folder.json"
    folder.mkdir()
    fifo = tmp_path / "pipe.parquet"
    os.mkfifo(fifo)
    return {"directory": folder, "FIFO (named pipe)": fifo, "missing": tmp_path / "missing.json"}


def _readers() -> dict[str, Callable[[Path], Any]]:
    return {
        "distribution file": distributions.load,
        "agent file": agents.load,
        "log file": lambda p: replay.Dataset(p, 2, 2),
        "value-error references file": References.load,
        "configuration": grid.load_config,
        "calibration": load_calibration,
        "table": lambda p: fileio.read_table(p, "table"),
        "document": lambda p: fileio.read_json_document(p, "document"),
    }


def test_every_reader_says_what_the_path_is(paths: dict[str, Path]) -> None:
    fifo = paths["FIFO (named pipe)"]
    for what, read in _readers().items():
        for kind, path in paths.items():
            if what == "value-error references file" and kind != "FIFO (named pipe)":
                continue  # its suffix must be .parquet: the FIFO's is
            error = _error(lambda read=read, path=path: read(path), fifo)
            if kind == "missing":
                assert isinstance(error, FileNotFoundError) and "not found" in str(error), (what, error)
                continue
            expected = f"{what} {str(path)!r} is a {kind}, not a regular file"
            assert isinstance(error, ValueError) and str(error) == expected, (what, kind, error)


def test_a_character_device_is_named_not_found_no_more() -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    with pytest.raises(ValueError, match=r"^distribution file '/dev/zero' is a character device, not a regular file$"):
        distributions.load("/dev/zero")
    with pytest.raises(ValueError, match=r"^agent file '/dev/zero' is a character device, not a regular file$"):
        agents.load("/dev/zero")


def test_results_folders_and_python_agent_files_say_what_the_path_is(paths: dict[str, Path], tmp_path: Path) -> None:
    fifo = paths["FIFO (named pipe)"]
    error = _error(lambda: results.load(fifo), fifo)
    assert isinstance(error, FileNotFoundError)
    assert str(error) == f"results folder {str(fifo)!r} is a FIFO (named pipe), not a folder"
    episodic = tmp_path / "episodic"
    episodic.mkdir()
    os.mkfifo(episodic / SETTINGS_FILE)
    error = _error(lambda: read_results(episodic), episodic / SETTINGS_FILE)
    assert isinstance(error, ValueError) and "is a FIFO (named pipe), not a regular file" in str(error), error
    os.mkfifo(tmp_path / "agent.py")
    error = _error(lambda: grid.load_python_agent_class("agent.py:Agent", tmp_path), tmp_path / "agent.py")
    assert isinstance(error, ValueError)
    assert re.fullmatch(r"Python agent file '.*agent\.py' is a FIFO \(named pipe\), not a regular file", str(error))
    with pytest.raises(ValueError, match=r"Python agent file '.*nothere\.py' not found"):
        grid.load_python_agent_class("nothere.py:Agent", tmp_path)


def test_the_command_line_says_what_the_path_is(paths: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    from bbrl.cli.app import main

    fifo = paths["FIFO (named pipe)"]

    def run() -> None:
        raise SystemExit(main(["run", "--experiment", str(fifo), "--agent", "random"]))

    code = _error(run, fifo)
    assert isinstance(code, SystemExit) and code.code == 2
    expected = f"bbrl: error: distribution file {str(fifo)!r} is a FIFO (named pipe), not a regular file\n"
    assert capsys.readouterr().err == expected
