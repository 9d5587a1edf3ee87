"""``dimobench export --format hf``: what `datasets` loads back, what the card says, same bytes on rerun, and the
CLI's refusals. Everything loads offline, with the `datasets` cache under tmp_path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from dimobench.api import export_suite
from dimobench.importers import import_benchmark
from dimobench.suite.card import canary
from dimobench.suite.io import sha256_file, write_jsonl
from dimobench.suite.load import load_suite
from dimobench.suite.schema import CriterionResult, VerdictRecord, VerifierInfo
from tests.helpers.cli import run_cli
from tests.helpers.importer_sources import locomo_sample, write_json

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")  # read when `datasets` is first imported

CRITERIA = ("supported", "temporally_valid", "implicit", "unambiguous", "type_faithful", "confounder_robust")


def _rehash(suite: Path, *names: str) -> None:
    manifest = json.loads((suite / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"].update({n: sha256_file(suite / n) for n in names})
    (suite / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def suite(small_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small suite plus verdicts (one criterion with an extra ``fixable``) and turns with an extra field, so
    declared, nested, dict-keyed and extra fields all appear."""
    root = tmp_path_factory.mktemp("export") / "suite"
    shutil.copytree(small_suite, root, ignore=shutil.ignore_patterns(".dimobench"))
    s = load_suite(root)
    verdicts = []
    for i, q in enumerate(s.qa):
        crit = {c: CriterionResult(verdict="ACCEPT", explanation=f"{c} holds") for c in CRITERIA}
        if i % 7 == 0:
            crit["implicit"] = CriterionResult(verdict="REJECT", explanation="names the state", fixable=True)
        verdicts.append(VerdictRecord(qa_id=q.qa_id, verdict="REVISE" if i % 7 == 0 else "ACCEPT", criteria=crit,
                                      verifier=VerifierInfo(provider="offline", model="m", prompt_hash=None)))
    write_jsonl(root / "verdicts.jsonl", verdicts)
    turns = [t.model_copy(update={"source_id": f"T{t.turn}"}) if t.turn % 2 else t for t in s.dialogues]
    write_jsonl(root / "dialogues.jsonl", turns)
    _rehash(root, "verdicts.jsonl", "dialogues.jsonl")
    return root


@pytest.fixture(scope="module")
def exported(suite: Path) -> Path:
    out = suite.parent / "hf"
    result = export_suite(suite, out)
    s = load_suite(suite)
    assert result.rows == {"personas": len(s.personas), "schedules": len(s.schedules),
                           "dialogues": len(s.dialogues), "qa": len(s.qa), "verdicts": len(s.verdicts)}
    assert result.files == sorted([f"{c}/test.parquet" for c in result.rows] + ["README.md", "suite_manifest.json"])
    return out


@pytest.fixture
def load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``datasets.load_dataset`` with its cache and home in tmp_path (nothing written in the user's home)."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    import datasets

    def run(*args: Any, **kwargs: Any) -> Any:
        return datasets.load_dataset(*args, cache_dir=str(tmp_path / "hf-cache"), **kwargs)

    return run


def card(out: Path) -> tuple[dict[str, Any], str]:
    text = (out / "README.md").read_text(encoding="utf-8")
    _, front, body = text.split("---\n", 2)
    return yaml.safe_load(front), body


def test_every_config_loads_back_with_the_suite_records(suite: Path, exported: Path, load: Any) -> None:
    s = load_suite(suite)
    ids = {"personas": [p.persona_id for p in s.personas], "schedules": [x.persona_id for x in s.schedules],
           "dialogues": [(t.persona_id, t.turn) for t in s.dialogues], "qa": [q.qa_id for q in s.qa],
           "verdicts": [v.qa_id for v in s.verdicts]}
    for config, expected in ids.items():
        ds = load("parquet", data_files=str(exported / config / "test.parquet"), split="train")
        key = ("persona_id", "turn") if config == "dialogues" else ("qa_id",) if config in ("qa", "verdicts") \
            else ("persona_id",)
        got = [tuple(r[k] for k in key) if len(key) > 1 else r[key[0]] for r in ds]
        assert got == expected, config
    # the folder itself, as a Hub repository is read: configs from the card, the one split "test"
    qa = load(str(exported), "qa", split="test")
    assert [r["qa_id"] for r in qa] == ids["qa"]


def test_nested_and_extra_fields_round_trip(suite: Path, exported: Path, load: Any) -> None:
    s = load_suite(suite)
    personas = load(str(exported), "personas", split="test")
    assert [r["traits"] for r in personas] == [[t.model_dump(mode="json") for t in p.traits] for p in s.personas]
    assert [r["profile"] for r in personas] == [p.profile for p in s.personas]
    turns = load(str(exported), "dialogues", split="test")
    assert [r["annotation"] for r in turns] == [t.annotation.model_dump(mode="json") if t.annotation else None
                                                for t in s.dialogues]
    assert [r["source_id"] for r in turns] == [(t.model_extra or {}).get("source_id") for t in s.dialogues]
    schedules = load(str(exported), "schedules", split="test")
    assert schedules[0]["drifts"] == [d.model_dump(mode="json") for d in s.schedules[0].drifts]
    verdicts = load(str(exported), "verdicts", split="test")
    first = verdicts[0]["criteria"]
    assert list(first) == list(CRITERIA)  # a struct per criterion, in the verifier's order, not JSON text
    assert first["implicit"] == {"verdict": "REJECT", "explanation": "names the state", "fixable": True}
    assert verdicts[1]["criteria"]["implicit"]["fixable"] is None
    qa = load(str(exported), "qa", split="test")
    assert qa[0]["options"] == s.qa[0].options and qa[0]["evidence_turns"] == s.qa[0].evidence_turns


def test_card_front_matter_names_every_config_and_its_features(suite: Path, exported: Path, load: Any) -> None:
    import datasets

    meta, body = card(exported)
    manifest = load_suite(suite).manifest
    assert meta["license"] == "cc-by-4.0" and "question-answering" in meta["task_categories"]
    names = [c["config_name"] for c in meta["configs"]]
    assert names == ["personas", "schedules", "dialogues", "qa", "verdicts"]
    assert [c["config_name"] for c in meta["configs"] if c.get("default")] == ["qa"]
    for c in meta["configs"]:
        assert all((exported / f["path"]).is_file() for f in c["data_files"])
    for info in meta["dataset_info"]:
        ds = load(str(exported), info["config_name"], split="test")
        assert datasets.Features._from_yaml_list(info["features"]) == ds.features, info["config_name"]
        assert info["splits"] == [{"name": "test", "num_bytes": info["dataset_size"], "num_examples": ds.num_rows}]
    assert canary(manifest) in body and canary(manifest).startswith("dimobench:canary:")
    assert "**Generator:** `offline`" in body and 'load_dataset("' in body
    assert f"{manifest.counts['qa']} questions" in body
    assert json.loads((exported / "suite_manifest.json").read_text()) == manifest.model_dump(mode="json")


def test_exporting_twice_gives_identical_bytes(suite: Path, exported: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    again = export_suite(suite, tmp_path / "again")
    for rel in again.files:
        assert (tmp_path / "again" / rel).read_bytes() == (exported / rel).read_bytes(), rel
    meta = json.loads(pq.read_schema(exported / "qa" / "test.parquet").metadata[b"dimobench"])
    assert meta["canary"] == again.canary == canary(load_suite(suite).manifest)
    again = export_suite(suite, tmp_path / "again", force=True)  # --force replaces an earlier export, same bytes
    assert all((tmp_path / "again" / rel).read_bytes() == (exported / rel).read_bytes() for rel in again.files)


def test_an_imported_suite_exports_its_extras_and_empty_plan(tmp_path: Path, load: Any) -> None:
    src = write_json(tmp_path / "locomo.json", locomo_sample())
    import_benchmark("locomo", src, tmp_path / "suite")
    result = export_suite(tmp_path / "suite", tmp_path / "hf")
    assert "schedules" not in result.rows  # no latent plan: no config (`datasets` cannot read an empty file)
    meta, body = card(tmp_path / "hf")
    assert meta["license"] == "cc-by-nc-4.0" and "CC BY-NC 4.0" in body and "synthetic" not in meta["tags"]
    assert "Left out for having no records: `schedules.jsonl`" in body and "| adversarial | 2 |" in body
    turns = load(str(tmp_path / "hf"), "dialogues", split="test")
    assert turns[0]["source_id"] == "D1:1" and turns[3]["image_caption"] == "a photo of a garden"
    assert [c["config_name"] for c in meta["configs"]] == ["personas", "dialogues", "qa"]
    qa = load(str(tmp_path / "hf"), "qa", split="test")
    assert qa.num_rows == 6 and all(r["options"] == [] for r in qa)


def test_the_card_carries_the_suite_audit(suite: Path) -> None:
    from dimobench.export.hfcard import render_hf_card

    manifest = load_suite(suite).manifest.model_copy(update={"audit": {
        "passed": False, "items": 360, "chance": 0.25, "strongest": {"name": "option_prior", "accuracy": 0.41},
        "shortcuts": {"bow_window": 0.3}, "flags": {}, "flagged_items": 0,
        "gates": [{"name": "no_context", "value": 0.41, "limit": 0.35, "passed": False}]}})
    text = render_hf_card(manifest, [], "test", [])
    assert "## Validity audit: FAIL" in text and "| no_context | 0.41 | 0.35 | **FAIL** |" in text


def one_line_exit_2(r: subprocess.CompletedProcess[str], needle: str) -> None:
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert needle in r.stderr, r.stderr


def test_cli_refuses_a_folder_it_did_not_make_and_an_unknown_format(suite: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me\n")
    one_line_exit_2(run_cli("export", str(suite), "--out", str(mine), "--force"), "was not written by dimobench")
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    one_line_exit_2(run_cli("export", str(suite), "--format", "csv", "--out", str(tmp_path / "x")),
                    "unknown export format 'csv' (known: hf)")
    assert not (tmp_path / "x").exists()
    r = run_cli("export", str(suite), "--out", str(tmp_path / "ok"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"wrote 7 files to {tmp_path / 'ok'} (hf: personas 3,")
    one_line_exit_2(run_cli("export", str(suite), "--out", str(tmp_path / "ok")), "use --force to replace it")


def test_cli_names_file_line_and_field_of_a_bad_record(suite: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(suite, bad)
    lines = (bad / "qa.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    rec = json.loads(lines[2])
    rec["ask_turn"] = "seven"
    lines[2] = json.dumps(rec) + "\n"
    (bad / "qa.jsonl").write_text("".join(lines), encoding="utf-8")
    one_line_exit_2(run_cli("export", str(bad), "--out", str(tmp_path / "o")), f"{bad / 'qa.jsonl'}:3: ask_turn:")
    one_line_exit_2(run_cli("export", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")), "not a suite")
    assert not (tmp_path / "o").exists()


def test_a_suite_whose_files_do_not_match_its_manifest_is_refused(suite: Path, tmp_path: Path) -> None:
    from dimobench.errors import InputError

    bad = tmp_path / "bad"
    shutil.copytree(suite, bad)
    text = (bad / "personas.jsonl").read_text(encoding="utf-8")
    (bad / "personas.jsonl").write_text(text.replace('"name": "', '"name": "X', 1), encoding="utf-8")
    with pytest.raises(InputError, match="personas.jsonl.*run|personas.jsonl.*lists them"):
        export_suite(bad, tmp_path / "o")
    assert not (tmp_path / "o").exists()


def test_the_cli_loads_no_pyarrow_until_export_runs() -> None:
    code = "import sys, dimobench.cli.app; print('pyarrow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
