"""generate's audit trains its learned attacks on offline suites of other seeds, not on the suite itself."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from dimobench.api import generate_suite, reference_seeds
from dimobench.generate.config import make_config


def test_generate_audits_against_reference_suites_of_other_seeds(tmp_path: Path) -> None:
    cfg = make_config(personas=2, turns=200, drifts=1, seed=23)
    before = {p.name for p in Path(tempfile.gettempdir()).glob("dimobench-reference-*")}
    generate_suite(cfg, tmp_path / "a", audit=True)
    assert {p.name for p in Path(tempfile.gettempdir()).glob("dimobench-reference-*")} == before  # removed
    assert 23 not in reference_seeds(23) and len(set(reference_seeds(23))) == 3
    audit = json.loads((tmp_path / "a" / "manifest.json").read_text(encoding="utf-8"))["audit"]
    assert audit["train"] == [f"train:reference-seed-{s}" for s in reference_seeds(23)]
    assert "reference-seed-" in (tmp_path / "a" / "README.md").read_text(encoding="utf-8")
    # nothing of the references is left beside or inside the suite
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]
    assert not [p for p in (tmp_path / "a").rglob("*") if "reference" in p.name]
    # the card is part of the suite's bytes: the same config and seed give the same manifest
    generate_suite(cfg, tmp_path / "b", audit=True)
    assert (tmp_path / "a" / "manifest.json").read_bytes() == (tmp_path / "b" / "manifest.json").read_bytes()
