"""generate's audit trains its learned attacks on offline suites of other seeds, not on the suite itself."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from dimobench.api import generate_suite, reference_seeds
from dimobench.generate.config import make_config


def test_generate_audits_against_reference_suites_of_other_seeds(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = make_config(personas=2, turns=200, drifts=1, seed=23)
    private = tmp_path / "tmp"  # a temporary folder of this test's own: others on the machine use the shared one
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    import dimobench.api as api

    folders: list[Path] = []
    real = api._reference_suites
    monkeypatch.setattr(api, "_reference_suites",
                        lambda c, folder, n=3: (folders.append(Path(folder)), real(c, folder, n))[1])
    generate_suite(cfg, tmp_path / "a", audit=True)
    assert len(folders) == 1 and folders[0].parent == private
    # the references were written there and removed (torch, loaded for the audit's question_meaning attack,
    # keeps its compile cache in the temporary folder it first sees: its own, not ours)
    assert not [p for p in private.iterdir() if not p.name.startswith("torchinductor")]
    assert 23 not in reference_seeds(23) and len(set(reference_seeds(23))) == 3
    audit = json.loads((tmp_path / "a" / "manifest.json").read_text(encoding="utf-8"))["audit"]
    assert audit["train"] == [f"train:reference-seed-{s}" for s in reference_seeds(23)]
    assert "reference-seed-" in (tmp_path / "a" / "README.md").read_text(encoding="utf-8")
    # nothing of the references is left beside or inside the suite
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "tmp"]
    assert not [p for p in (tmp_path / "a").rglob("*") if "reference" in p.name]
    # the card is part of the suite's bytes: the same config and seed give the same manifest
    generate_suite(cfg, tmp_path / "b", audit=True)
    assert (tmp_path / "a" / "manifest.json").read_bytes() == (tmp_path / "b" / "manifest.json").read_bytes()


def test_audit_reference_trains_as_generate_did_and_refuses_what_it_cannot_remake(tmp_path: Path) -> None:
    from dimobench.importers import import_benchmark
    from tests.helpers.cli import run_cli
    from tests.helpers.importer_sources import locomo_sample, write_json

    cfg = make_config(personas=2, turns=200, drifts=1, seed=31, qa_rules="valid")
    generate_suite(cfg, tmp_path / "s", audit=True)
    card = json.loads((tmp_path / "s" / "manifest.json").read_text(encoding="utf-8"))["audit"]
    r = run_cli("audit", str(tmp_path / "s"), "--reference", "3", "--out", str(tmp_path / "card"))
    assert r.returncode in (0, 1), r.stderr
    seeds = reference_seeds(31)
    assert r.stdout.splitlines()[0].endswith(", ".join(f"reference-seed-{s}" for s in seeds))
    again = json.loads((tmp_path / "card" / "audit.json").read_text(encoding="utf-8"))
    assert again["train"] == card["train"] == [f"train:reference-seed-{s}" for s in seeds]
    assert (again["strongest"]["name"], again["strongest"]["accuracy"]) == (card["strongest"]["name"],
                                                                             card["strongest"]["accuracy"])
    import_benchmark("locomo", write_json(tmp_path / "locomo.json", locomo_sample()), tmp_path / "imported")
    refused = run_cli("audit", str(tmp_path / "imported"), "--reference", "2")
    assert refused.returncode == 2 and "--reference needs a suite dimobench generated offline" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    # a suite made by another catalog or stage version (its fingerprints differ) is not remade by default
    import shutil

    shutil.copytree(tmp_path / "s", tmp_path / "older")
    manifest = json.loads((tmp_path / "older" / "manifest.json").read_text(encoding="utf-8"))
    manifest["stages"]["dialogue"]["fingerprint"] = "0" * 64
    (tmp_path / "older" / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    older = run_cli("audit", str(tmp_path / "older"))
    assert older.stdout.splitlines()[0].endswith("trained on: the other personas (leave-one-persona-out)")
    same = run_cli("audit", str(tmp_path / "s"))
    assert same.stdout.splitlines()[0].endswith(", ".join(f"reference-seed-{s}" for s in seeds))
    # and without --reference, a suite it cannot remake is attacked leave-one-persona-out
    lopo = run_cli("audit", str(tmp_path / "imported"))
    assert lopo.returncode in (0, 1), lopo.stderr
    assert lopo.stdout.splitlines()[0].endswith("trained on: the other personas (leave-one-persona-out)")


def test_two_suites_of_one_seed_made_otherwise_are_each_attacked_with_their_own_references(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dimobench.api import audit_suite
    from dimobench.suite.load import load_suite

    made: list[tuple[int, int]] = []  # (seed, turns) of every reference suite written
    import dimobench.api as api

    real = api.generate_suite
    monkeypatch.setattr(api, "generate_suite",
                        lambda c, out, **kw: (made.append((c.seed, c.turns)), real(c, out, **kw))[1])
    for name, turns in (("short", 120), ("long", 160)):
        real(make_config(personas=1, turns=turns, drifts=1, seed=41), tmp_path / name)
    report = audit_suite([tmp_path / "short", tmp_path / "long"], reference=1)
    # one reference per suite, each of its own length (the second was once skipped as "already made")
    assert sorted(made) == [(reference_seeds(41, 1)[0], 120), (reference_seeds(41, 1)[0], 160)]
    ref = reference_seeds(41, 1)[0]
    assert report.train == [f"train:reference-seed-{ref}", f"train:reference-seed-{ref}-2"]
    assert load_suite(tmp_path / "long").manifest.config["turns"] == 160
