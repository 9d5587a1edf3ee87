"""Stratified sampling and blind sheets on a real --preset dimobench suite."""

from __future__ import annotations

import csv
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from dimobench.errors import ConfigError
from dimobench.review.sampling import allocate, draw_sample, sample_id_of, stratum_of
from dimobench.review.sheets import LABEL_COLUMNS, SHEET_COLUMNS
from dimobench.suite.load import load_suite
from dimobench.suite.schema import CriterionResult, VerdictRecord, VerifierInfo
from tests.helpers.cli import run_cli
from tests.helpers.review_sheets import read_rows


@pytest.mark.parametrize("seed", range(25))
def test_largest_remainder_total_and_per_stratum_bounds(seed: int) -> None:
    rng = random.Random(seed)
    sizes = {f"s{i}": rng.randint(0, 90) for i in range(rng.randint(1, 16))}
    frac = rng.choice([0.05, 0.1, 0.2, 0.25, 1 / 3, 0.5, 0.77, 1.0])
    got = allocate(sizes, frac)
    assert sum(got.values()) == int(frac * sum(sizes.values()) + 0.5)
    for s, n in sizes.items():
        assert 0 <= got[s] <= n and abs(got[s] - frac * n) < 1


def test_allocate_rejects_bad_frac() -> None:
    with pytest.raises(ConfigError, match="--frac"):
        allocate({"a": 3}, 1.5)


def test_preset_suite_sample_is_stratified_blind_and_calibrated(dimo_suite: Path, tmp_path: Path) -> None:
    suite = load_suite(dimo_suite)
    assert len(suite.qa) == 1000
    # give the suite verifier verdicts with a marker text: the sheets must not show them
    marker = "VERIFIER-SAYS-SECRET"
    crit = {c: CriterionResult(verdict="REJECT", explanation=marker) for c in ("supported", "implicit")}
    info = VerifierInfo(provider="offline", model="x", prompt_hash=None)
    verdicts = [VerdictRecord(qa_id=q.qa_id, verdict="REVISE", criteria=crit, verifier=info)
                for q in suite.qa]
    verified = tmp_path / "suite"
    verified.mkdir()
    for f in dimo_suite.glob("*.*"):
        if f.is_file():
            (verified / f.name).write_bytes(f.read_bytes())
    (verified / "verdicts.jsonl").write_text("".join(v.model_dump_json() + "\n" for v in verdicts))
    out = tmp_path / "sample"
    r = run_cli("review", "sample", str(verified), "--frac", "0.2", "--by", "qa_type,phase", "--annotators",
                "2", "--calibration", "30", "--seed", "0", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "sampled 200 of 1000" in r.stdout
    sample = [json.loads(line) for line in (out / "sample.jsonl").read_text().splitlines()]
    assert len(sample) == 200 and len({s["qa_id"] for s in sample}) == 200
    sizes = Counter(stratum_of(q, ("qa_type", "phase")) for q in suite.qa)
    drawn = Counter(s["stratum"] for s in sample)
    assert set(drawn) <= set(sizes)
    for stratum, n in sizes.items():
        assert abs(drawn[stratum] - 0.2 * n) < 1, stratum
    assert sorted(p.name for p in out.glob("*.csv")) == ["sheet_a.csv", "sheet_b.csv"]
    a, b = (out / "sheet_a.csv").read_bytes(), (out / "sheet_b.csv").read_bytes()
    assert a == b and a.startswith(b"\xef\xbb\xbf")
    assert marker not in a.decode("utf-8") and "REVISE" not in a.decode("utf-8")
    rows = read_rows(out / "sheet_a.csv")
    assert list(rows[0]) == list(SHEET_COLUMNS)
    assert [r["qa_id"] for r in rows] == [s["qa_id"] for s in sample]
    assert all(r[c] == "" for r in rows for c in LABEL_COLUMNS)
    assert sum(r["calibration"] == "yes" for r in rows) == 30
    assert {r["qa_id"] for r in rows if r["calibration"]} == {s["qa_id"] for s in sample if s["calibration"]}
    assert {r["sample_id"] for r in rows} == {sample_id_of([s["qa_id"] for s in sample])}
    by_id = {q.qa_id: q for q in suite.qa}
    first = by_id[rows[0]["qa_id"]]
    assert rows[0]["question"] == first.question
    assert rows[0]["options"].splitlines()[0] == f"1. {first.options[0]}"
    assert rows[0]["gold"] == f"{first.answer_index + 1}. {first.answer}"
    assert f"t{first.ask_turn} (" in rows[0]["context"]
    assert all(f"t{t} (" in rows[0]["evidence"] for t in first.evidence_turns)


def test_sheet_is_valid_csv_with_multiline_cells(small_sample: Path) -> None:
    raw = (small_sample / "sheet_a.csv").read_bytes().decode("utf-8-sig")
    rows = list(csv.reader(raw.splitlines(keepends=True)))
    assert len(rows) == 11 and all(len(r) == len(SHEET_COLUMNS) for r in rows)
    assert any("\n" in cell for r in rows[1:] for cell in r)


def test_sample_is_deterministic_and_seeded(dimo_suite: Path) -> None:
    qa = load_suite(dimo_suite).qa
    one, two = draw_sample(qa, seed=3), draw_sample(qa, seed=3)
    assert one == two
    other = draw_sample(qa, seed=4)
    assert other.sample_id != one.sample_id and len(other.items) == len(one.items)
    assert all(it.calibration for it in draw_sample(qa, frac=0.01, calibration=500).items)


def test_names_force_and_bad_options(dimo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "s"
    r = run_cli("review", "sample", str(dimo_suite), "--frac", "0.05", "--names", "ann,bob,cy", "--out",
                str(out))
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.glob("*.csv")) == ["sheet_ann.csv", "sheet_bob.csv", "sheet_cy.csv"]
    r = run_cli("review", "sample", str(dimo_suite), "--frac", "0.05", "--out", str(out))
    assert r.returncode == 2 and "--force" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = run_cli("review", "sample", str(dimo_suite), "--frac", "0.05", "--out", str(out), "--force")
    assert r.returncode == 0 and sorted(p.name for p in out.glob("*.csv")) == ["sheet_a.csv", "sheet_b.csv"]
    bad = ((["--frac", "2"], "--frac"), (["--by", "colour"], "--by"), (["--annotators", "1"], "two"),
           (["--names", "a/b,c"], "--names"))
    for args, msg in bad:
        r = run_cli("review", "sample", str(dimo_suite), *args, "--out", str(tmp_path / "x"))
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
