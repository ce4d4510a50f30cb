"""CITATION.cff: Citation File Format 1.2 with the fields GitHub and Zenodo read, and as references
the papers whose methods bbrl implements (each cited by the README)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_citation_file_cites_the_papers_the_readme_names() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (pip install pyyaml)")
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["cff-version"] == "1.2.0"
    for key in ("message", "title", "authors", "type", "license", "version"):
        assert citation[key], key
    # The version is the workspace's (Cargo.toml), which the package's is built from.
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text(encoding="utf-8"))["workspace"]["package"]
    assert str(citation["version"]) == workspace["version"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    cited = {(r["authors"][0]["family-names"], r["year"]) for r in citation["references"]}
    assert cited == {("Castronovo", 2016), ("Mandel", 2016), ("Sajed", 2018)}
    for name, year in cited:
        assert f"{name} et al. ({year}" in readme or f"{name} et al. {year}" in readme, name
