"""Every ```python and ```bash block of README.md and docs/*.md runs as written.

Each block is saved as a script in a fresh temporary folder and run in a subprocess with the
installed package (``bbrl`` and the ``bbrl`` command of this interpreter's environment). A block
that cannot run here (a cluster, the full study, a build) is preceded in its document by a marker
naming the reason, ``<!-- not run: REASON -->``, and is reported as skipped with that reason.
A block the text asks the reader to save under a name (``<!-- file: my_psrl.py -->`` before it)
runs under that name, and the later blocks of its document find the file beside them.
A long block (the quick study, a pilot, thousands of rollouts) is preceded by
``<!-- small: REASON -->`` and runs as written with ``BBRL_SMOKE=1`` in its environment, the setting
of :mod:`bbrl.smoke` under which every study command runs at a tiny size.
A ```bash block that runs holds only ``bbrl`` commands. Blocks in other languages (TOML, Rust,
sample output) are not programs and are not collected. The sizes in the blocks are the ones a
reader runs: they are chosen small enough for this test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\S*)\s*$")
MARKER = re.compile(r"^<!--\s*not run:(.*?)-->\s*$")
SMALL_MARKER = re.compile(r"^<!--\s*small:(.*?)-->\s*$")
FILE_MARKER = re.compile(r"^<!--\s*file:\s*([\w.-]+\.py)\s*-->\s*$")
RUNNABLE = ("python", "bash")
# Documents whose blocks cannot run here, with the reason, for blocks that carry no marker of their own.
DOCUMENT_REASONS = {
    "cluster-dask.md": (
        "installs the cluster extra or starts a Dask scheduler and workers in the background "
        "(tests/grid/test_cluster_dask.py runs grids on a local Dask cluster)"
    ),
}
# Seconds per block: the slowest block takes about 15 s on a loaded 2-core machine.
TIMEOUT = 180


@dataclass(frozen=True)
class Block:
    document: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    skip_reason: str | None  # None: run; otherwise the marker's text (possibly empty)
    file_name: str | None = None  # the name the document gives the block, if any
    small: str | None = None  # the reason it runs at smoke-test sizes, if it does

    @property
    def name(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def extract(document: Path) -> tuple[list[Block], list[int]]:
    """The runnable-language blocks of a Markdown file, and the lines of markers that precede no
    such block (a marker before prose or another language is a mistake)."""
    lines = document.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    stray: list[int] = []
    # The last marker not yet used: (line, "not run" or "small", reason).
    pending: tuple[int, str, str] | None = None
    file_name: str | None = None
    i = 0
    while i < len(lines):
        text = lines[i]
        named = FILE_MARKER.match(text)
        if named:
            file_name = named.group(1)
            i += 1
            continue
        marker = MARKER.match(text) or SMALL_MARKER.match(text)
        if marker:
            if pending is not None:
                stray.append(pending[0])
            kind = "not run" if marker.re is MARKER else "small"
            pending = (i + 1, kind, marker.group(1).strip())
            i += 1
            continue
        fence = FENCE.match(text)
        if fence:
            language = fence.group(1)
            start = i
            i += 1
            body: list[str] = []
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if language in RUNNABLE:
                kind, reason = (pending[1], pending[2]) if pending is not None else ("", "")
                skip = reason if kind == "not run" else None if kind == "small" else DOCUMENT_REASONS.get(document.name)
                name = file_name if language == "python" else None
                code = "\n".join(body) + "\n"
                small = reason if kind == "small" else None
                blocks.append(Block(document, start + 1, language, code, skip, name, small))
            elif pending is not None:
                stray.append(pending[0])
            pending = None
            file_name = None
        elif text.strip() and pending is not None:
            stray.append(pending[0])
            pending = None
        i += 1
    if pending is not None:
        stray.append(pending[0])
    return blocks, stray


BLOCKS = [block for document in DOCUMENTS for block in extract(document)[0]]


def test_every_skipped_block_names_its_reason_and_every_marker_its_block() -> None:
    """The count of run and skipped blocks (printed with ``-s``), every skip with a reason, no
    marker left without a block, and runnable bash blocks made of bbrl commands only."""
    assert DOCUMENTS[0].name == "README.md" and len(DOCUMENTS) > 5
    run = [b for b in BLOCKS if b.skip_reason is None]
    small = [b for b in run if b.small is not None]
    skipped = [b for b in BLOCKS if b.skip_reason is not None]
    print(f"\n{len(BLOCKS)} code blocks: {len(run)} run ({len(small)} at smoke-test sizes), {len(skipped)} skipped")
    for block in small:
        print(f"  small {block.name}: {block.small}")
    assert [b.name for b in small if not b.small] == [], "a 'small' marker without a reason"
    for block in skipped:
        print(f"  skipped {block.name}: {block.skip_reason}")
    assert [b.name for b in skipped if not b.skip_reason] == [], "a 'not run' marker without a reason"
    stray = [f"{d.relative_to(ROOT)}:{line}" for d in DOCUMENTS for line in extract(d)[1]]
    assert stray == [], "'not run' markers that precede no python or bash block"
    for block in run:
        if block.language == "bash":
            commands = [c for c in (line.split("#")[0].strip() for line in block.code.splitlines()) if c]
            assert commands and all(c.startswith("bbrl ") or c == "bbrl" for c in commands), block.name
    # README: a runnable block beside each part, each part's document linked.
    readme = DOCUMENTS[0].read_text(encoding="utf-8")
    for doc in ("docs/replay.md", "docs/value-error.md", "docs/adding-an-agent.md", "docs/cluster-dask.md"):
        assert f"]({doc}" in readme, doc
    readme_run = "\n".join(b.code for b in run if b.document == DOCUMENTS[0])
    for used in ("Experiment(", "agents.Agent", "replay.evaluate(", "value_error", "gymnasium"):
        assert used in readme_run, f"no runnable README block uses {used}"


def test_extract_reads_markers_blocks_and_strays(tmp_path: Path) -> None:
    """The extractor on a small document: a marked block is skipped with its reason, an unmarked
    one runs, a "small" one runs with its reason, other languages are not collected, and a marker
    before prose (or before nothing) is reported."""
    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n<!-- not run: needs a cluster -->\n```bash\nsbatch x\n```\n```python\nprint(1)\n```\n"
        "```toml\na = 1\n```\n<!-- not run: x -->\nprose\n```bash\nbbrl agents\n```\n"
        "<!-- file: mine.py -->\n```python\nX = 1\n```\n```python\nfrom mine import X\n```\n<!-- not run: y -->\n"
        "<!-- small: minutes -->\n```bash\nbbrl paper --quick\n```\n<!-- small: z -->\n",
        encoding="utf-8",
    )
    blocks, stray = extract(doc)
    assert [(b.line, b.language, b.skip_reason, b.code, b.file_name, b.small) for b in blocks] == [
        (3, "bash", "needs a cluster", "sbatch x\n", None, None),
        (6, "python", None, "print(1)\n", None, None),
        (14, "bash", None, "bbrl agents\n", None, None),
        (18, "python", None, "X = 1\n", "mine.py", None),
        (21, "python", None, "from mine import X\n", None, None),
        (26, "bash", None, "bbrl paper --quick\n", None, "minutes"),
    ]
    assert stray == [12, 24, 29]


def _environment(small: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("BBRL_SMOKE", None)
    if small:
        env["BBRL_SMOKE"] = "1"
    # This interpreter's environment first, so `bbrl` is the installed command of the package under test.
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["MPLBACKEND"] = "Agg"
    env.pop("PYTHONPATH", None)
    return env


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    if block.skip_reason is not None:
        pytest.skip(f"not run: {block.skip_reason}")
    for earlier in BLOCKS:
        if earlier.document == block.document and earlier.line < block.line and earlier.file_name:
            (tmp_path / earlier.file_name).write_text(earlier.code, encoding="utf-8")
    if block.language == "python":
        script = tmp_path / (block.file_name or "block.py")
        command = [sys.executable, str(script)]
    else:
        script = tmp_path / "block.sh"
        command = ["bash", "-euo", "pipefail", str(script)]
    script.write_text(block.code, encoding="utf-8")
    done = subprocess.run(
        command,
        cwd=tmp_path,
        env=_environment(small=block.small is not None),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    report = (
        f"{block.name} exited {done.returncode}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    )
    assert done.returncode == 0, report
    # Worker processes can print tracebacks and still let the parent exit 0: none is allowed.
    assert "Traceback" not in done.stderr, report


def test_a_script_without_the_main_guard_is_told_about_it(tmp_path: Path) -> None:
    """The mistake docs/adding-an-agent.md's guard prevents: a script that runs a Python agent on
    worker processes at its top level fails with an error that names the guard."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import bbrl\nfrom bbrl import agents\n\n\nclass Zero(agents.Agent):\n    def act(self, state, rng):\n"
        "        return 0\n\n\nbbrl.Experiment('GC', n_mdps=4, horizon=5, seed=0).run(Zero(), threads=2)\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=_environment(), capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode != 0
    # The parent's error (worker tracebacks and exit warnings may surround it).
    errors = [line for line in done.stderr.splitlines() if line.startswith("RuntimeError: a worker process")]
    assert errors and 'if __name__ == "__main__":' in errors[-1], done.stderr[-3000:]
