"""Formula language, formula sets, the Formula and OPPS-DS agents, trained-agent files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bbrl
from bbrl import agents, formulas


def test_parse_both_forms_and_render() -> None:
    f = formulas.parse("X0 X2 ABS MAX2")
    assert f.rpn == "X0 X2 ABS MAX2" and f.infix == "max(QMean, |QUniform|)" and f.n_tokens == 4
    assert f.paper_infix == "max(Q2, |Q0|)"
    assert formulas.parse(f.infix) == f
    assert formulas.parse(f.paper_infix, paper_names=True) == f
    assert f(1.0, 0.0, -3.0) == 3.0
    assert formulas.parse("QUniform / QMean").rpn == "X2 X0 DIV"
    assert formulas.parse("quniform / X0").rpn == "X2 X0 DIV"


# The paper's numbering, the reverse of bbrl's X indices (docs/formulas.md): Q0 = QUniform = X2,
# Q1 = QSelf = X1, Q2 = QMean = X0.
@pytest.mark.parametrize(
    ("paper", "rpn"),
    [("Q0", "X2"), ("Q1", "X1"), ("Q2", "X0"), ("Q2 / Q0", "X0 X2 DIV"), ("max(Q1, Q2) - Q0", "X1 X0 MAX2 X2 SUB")],
)
def test_the_papers_names_need_the_explicit_option(paper: str, rpn: str) -> None:
    assert formulas.parse(paper, paper_names=True).rpn == rpn
    with pytest.raises(ValueError, match=r"is ambiguous.*write (QMean|QSelf|QUniform) \(or X[012]\)"):
        formulas.parse(paper)
    # RPN is never affected by the option.
    assert formulas.parse(rpn, paper_names=True).rpn == rpn


def test_paper_names_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="paper_names must be a bool"):
        formulas.parse("Q0", paper_names=1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "match"), [("X0 X1", "operand|valid|stack"), ("X0 FOO", "FOO"), ("", "empty|formula"), ("X3", "X3")]
)
def test_invalid_formulas_are_value_errors(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        formulas.parse(text)


def test_evaluation_errors_are_arithmetic_errors() -> None:
    for text, x in (
        ("X0 LN", (0.0, 1, 1)),
        ("X0 SQRT", (-1.0, 1, 1)),
        ("X1 INV", (1, 0.0, 1)),
        ("X0 X1 DIV", (1, 0.0, 1)),
    ):
        with pytest.raises(ArithmeticError):
            formulas.parse(text)(*x)


def test_formula_set_sizes_and_f2_content() -> None:
    assert [len(formulas.formula_set(n)) for n in (2, 3, 4)] == [12, 43, 226]
    f2 = {f.rpn for f in formulas.formula_set(2)}
    expected = {f"X{i}{op}" for i in range(3) for op in ("", " ABS", " INV", " OPP")}
    assert f2 == expected
    # F2-F4 do not depend on the points.
    assert {f.rpn for f in formulas.formula_set(3, seed=5)} == {f.rpn for f in formulas.formula_set(3)}
    assert 1150 < len(formulas.formula_set(5)) < 1250 and 7200 < len(formulas.formula_set(6)) < 7500


def test_formula_set_bad_input() -> None:
    with pytest.raises(ValueError, match="sizes 2 to 6"):
        formulas.formula_set(7)
    with pytest.raises(ValueError, match="seed"):
        formulas.formula_set(3, seed=-1)


def test_write_formula_set_reproduces_the_shipped_f4(tmp_path: Path) -> None:
    path = formulas.write_formula_set(tmp_path / "F4.txt", 4, seed=0)
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    assert lines == [f.rpn for f in formulas.formula_set(4)]


def test_formula_agent_and_bad_parameters() -> None:
    exp = bbrl.Experiment("GC", n_mdps=20, horizon=100, seed=0)
    run = exp.run(agents.Formula("max(QMean, QUniform)"))
    assert run.returns.shape == (20,) and run.agent == "Formula (formula=X0 X2 MAX2)"
    with pytest.raises(ValueError):
        agents.Formula("X0 X1")
    with pytest.raises(ValueError, match="n_draws must be >= 1"):
        agents.OPPSDS(2, n_draws=0)
    with pytest.raises(ValueError, match="c must be >= 0"):
        agents.OPPSDS(2, n_draws=10, c=-1.0)
    with pytest.raises(ValueError, match="formula_set"):
        agents.OPPSDS(9, n_draws=10)
    with pytest.raises(ValueError):
        agents.OPPSDS(["X0", "X0 X1"], n_draws=10)


def test_formula_errors_do_not_lose_the_run_unless_compat() -> None:
    # QSelf is 0 for most pairs at the start: 1/QSelf divides by zero.
    exp = bbrl.Experiment("GC", n_mdps=5, horizon=20, seed=0)
    assert exp.run(agents.Formula("X1 INV")).returns.shape == (5,)
    with pytest.raises(RuntimeError, match=r"failed on MDP \d+ at step \d+: formula .X1 INV. failed"):
        exp.run(agents.Formula("X1 INV", compat=True))


def test_opps_picks_the_clearly_best_formula() -> None:
    """On GC, the greedy-on-mean index QMean beats its opposite by far; UCB1 must pick it."""
    trained = agents.OPPSDS(["X0 OPP", "X0"], n_draws=60, c=5.0).train("GC", 0.95, 100, 0)
    assert trained.formula == "X0"
    assert trained.details["formula_infix"] == "QMean"


def test_trained_agent_round_trip_gives_identical_returns(tmp_path: Path) -> None:
    exp = bbrl.Experiment("GC", n_mdps=30, horizon=100, seed=1)
    trained = agents.OPPSDS(3, n_draws=100).train("UGC", exp.gamma, exp.horizon, exp.seed)
    direct = exp.run(agents.OPPSDS(3, n_draws=100), prior="UGC")
    from_trained = exp.run(trained)
    assert np.array_equal(direct.returns, from_trained.returns)
    assert direct.details == from_trained.details and direct.learned.startswith("formula ")
    path = trained.save(tmp_path / "opps.json")
    assert json.loads(path.read_text())["state"] is not None
    loaded = agents.load(path)
    assert loaded.formula == trained.formula and loaded.prior == trained.prior
    assert np.array_equal(exp.run(loaded).returns, from_trained.returns)
    # A cheap agent is saved without state and retrained identically.
    beb = agents.BEB(1.0).train("GC", exp.gamma, exp.horizon, exp.seed)
    beb_loaded = agents.load(beb.save(tmp_path / "beb.json"))
    assert np.array_equal(exp.run(beb_loaded).returns, exp.run(agents.BEB(1.0)).returns)
    with pytest.raises(ValueError, match="trained on prior"):
        exp.run(loaded, prior="GC")


def test_agent_file_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        agents.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something"}')
    with pytest.raises(ValueError, match="not a bbrl agent file"):
        agents.load(bad)


def test_the_command_line_reads_the_papers_names_only_when_asked() -> None:
    exe = shutil.which("bbrl")
    command = [exe] if exe else [sys.executable, "-m", "bbrl"]
    base = [*command, "run", "--experiment", "GC", "--agent", "formula", "--param", "formula=Q2 / Q0"]
    small = ["--n-mdps", "5", "--horizon", "20", "--seed", "0"]
    out = subprocess.run([*base, "--paper-names", *small], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "formula=X0 X2 DIV" in out.stdout
    out = subprocess.run([*base, *small], capture_output=True, text=True, timeout=600)
    assert out.returncode == 2 and "'Q2' is ambiguous" in out.stderr and "Traceback" not in out.stderr
