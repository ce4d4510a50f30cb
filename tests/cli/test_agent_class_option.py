"""``--agent-class``: a relative path (``../../x.py:X``) is a file path from the current folder; a
relative module name (``.x:X``) is refused in one line, not with importlib's "the 'package'
argument is required to perform a relative import"."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bbrl import grid

AGENT = """\
from bbrl import agents


class Always(agents.Agent):
    def act(self, state, rng):
        return 0
"""

#: Trains the class of a file and saves it, as a user would (in its own process: the file's
#: module is not imported into the tests').
SAVE = """\
import sys
from pathlib import Path

from bbrl.grid import load_python_agent_class

cls = load_python_agent_class("always.py:Always", Path(sys.argv[1]))
cls().train("GC", 0.95, 5, 1).save(Path(sys.argv[1]) / "agent.json")
"""


def _bbrl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("bbrl", path=os.path.dirname(sys.executable))  # the CLI under test, not PATH's
    command = [exe] if exe else [sys.executable, "-m", "bbrl"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_a_relative_path_is_a_file_from_the_current_folder(tmp_path: Path) -> None:
    (tmp_path / "always.py").write_text(AGENT)
    saved = subprocess.run([sys.executable, "-c", SAVE, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert saved.returncode == 0, saved.stderr
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    common = ["run", "--experiment", "GC", "--agent-file", "../../agent.json", "--n-mdps", "2", "--horizon", "5"]
    done = _bbrl(*common, "--agent-class", "../../always.py:Always", cwd=deep)
    assert done.returncode == 0, done.stderr
    # Relative to the current folder, not to the agent file's: from tmp_path, ../../always.py is elsewhere.
    missing = _bbrl(
        *common[:4], "a/b/../../agent.json", *common[5:], "--agent-class", "../../always.py:Always", cwd=tmp_path
    )
    assert missing.returncode == 2
    assert missing.stderr == f"bbrl: error: Python agent file {str(tmp_path / '../../always.py')!r} not found\n"


@pytest.mark.parametrize("reference", [".always:Always", "..agents.always:Always", "../../always:Always"])
def test_a_relative_module_name_is_refused_in_one_line(
    reference: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bbrl.cli.app import main

    code = main(["run", "--experiment", "GC", "--agent-file", str(tmp_path / "agent.json"), "--agent-class", reference])
    assert code == 2
    assert capsys.readouterr().err == (
        f"bbrl: error: {reference!r}: relative module names are not supported: write a path ending in .py or "
        "an absolute module name\n"
    )


def test_a_path_without_py_is_not_taken_for_a_module_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^'agents/always:Always': 'agents/always' is not a module name: a file path"):
        grid.load_python_agent_class("agents/always:Always", tmp_path)
