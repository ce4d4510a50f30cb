"""``bbrl value-error references``."""

from __future__ import annotations

from bbrl import value_error as ve
from bbrl.cli import main


def test_references_command_writes_a_loadable_file(tmp_path, capsys):
    out = tmp_path / "refs.parquet"
    argv = ["value-error", "references", "--env", "mountain-car", "--states", "4", "--epsilon", "0.3"]
    assert main([*argv, "--delta", "0.1", "--k", "5", "--seed", "2", "--out", str(out)]) == 0
    refs = ve.References.load(out)
    assert refs.m == 4 and refs.certified
    assert (refs.params["epsilon"], refs.params["k"], refs.params["seed"]) == (0.3, 5, 2)
    assert refs.params["policy_random_share"] == 0.6 and refs.params["env_discount"] == 0.99
    assert "guaranteed CMAPVE error" in capsys.readouterr().out


def test_references_command_errors(tmp_path, capsys):
    base = ["value-error", "references", "--env", "puddle-world", "--states"]
    assert main([*base, "2", "--out", str(tmp_path / "missing" / "r.parquet")]) == 2
    assert main([*base, "0", "--out", str(tmp_path / "r.parquet")]) == 2
    assert main([*base, "2", "--tau", "0", "--out", str(tmp_path / "r.parquet")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "tau = 0" in err
    assert not (tmp_path / "r.parquet").exists()
