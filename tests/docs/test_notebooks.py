"""The notebooks of examples/ run from top to bottom at smoke-test sizes (``BBRL_SMOKE=1``), each
within a minute of CPU time (the kernel's, and its children's)."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))
#: CPU seconds a notebook may take at smoke-test sizes.
CPU_LIMIT = 60.0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_there_are_the_two_notebooks() -> None:
    assert [n.name for n in NOTEBOOKS] == ["benchmark.ipynb", "your_own_agent.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_notebook_runs_at_smoke_sizes(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install nbformat)")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install nbclient)")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (pip install ipykernel)")
    monkeypatch.setenv("BBRL_SMOKE", "1")  # the kernel inherits this process's environment
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), (
        f"{path.name} is stored with outputs: clear them"
    )
    before = _children_cpu()
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError naming the cell and its traceback
    cpu = _children_cpu() - before  # the kernel has exited and been waited for
    print(f"{path.name}: {cpu:.1f} s of CPU")
    assert cpu <= CPU_LIMIT, f"{path.name} took {cpu:.1f} s of CPU at smoke sizes (limit {CPU_LIMIT:.0f} s)"
