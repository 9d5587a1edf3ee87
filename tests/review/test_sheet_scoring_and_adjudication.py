"""``dimobench review score/adjudicate/merge`` as a real process: known kappas, the gate, bad sheets."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from tests.helpers.cli import run_cli
from tests.helpers.review_sheets import fill, read_rows, write_rows

# 10 items, confusion [[4, 1], [1, 4]] over ACCEPT/REJECT: p_o = 0.8, p_e = 0.5, kappa = 0.6
A = ["ACCEPT"] * 5 + ["REJECT"] * 5
B = ["ACCEPT"] * 4 + ["REJECT"] + ["ACCEPT"] + ["REJECT"] * 4


@pytest.fixture()
def sample(small_sample: Path, tmp_path: Path) -> Path:
    out = tmp_path / "sample"
    shutil.copytree(small_sample, out)
    return out


def score(sample: Path, *extra: str, sheets: tuple[str, ...] = ("a", "b")) -> tuple[int, dict, str]:
    out = sample / "agreement.json"
    paths = [str(sample / f"sheet_{s}.csv") for s in sheets]
    r = run_cli("review", "score", *paths, "--out", str(out), *extra)
    data = json.loads(out.read_text()) if r.returncode in (0, 1) else {}
    return r.returncode, data, r.stdout + r.stderr


def test_known_kappa_and_the_gate(sample: Path) -> None:
    fill(sample / "sheet_a.csv", sample / "sheet_a.csv", A)
    fill(sample / "sheet_b.csv", sample / "sheet_b.csv", B)
    code, data, _ = score(sample, "--min-kappa", "0.5")
    assert code == 0
    assert data["kappa"]["verdict"] == pytest.approx(0.6) == cohen_kappa_score(A, B)
    assert data["raw_agreement"]["verdict"] == 0.8 and data["gate"]["passed"]
    assert data["confusion"]["a vs b"]["verdict"]["matrix"] == [[4, 0, 1], [0, 0, 0], [1, 0, 4]]
    assert data["kappa"]["supported"] is None and "p_e = 1" in data["kappa_notes"]["supported"]
    lo, hi = data["kappa_ci"]["verdict"]
    assert lo < 0.6 < hi
    code, data, text = score(sample, "--min-kappa", "0.75")
    assert code == 1 and not data["gate"]["passed"] and "gate not met" in text
    md = (sample / "agreement.md").read_text()
    assert "by criterion" in md and "by stratum" in md and "Gate: not met" in md


def test_bom_free_lowercase_sheet_scores_the_same(sample: Path) -> None:
    fill(sample / "sheet_a.csv", sample / "sheet_a.csv", A)
    sheet_b = sample / "sheet_b.csv"
    rows = fill(sheet_b, sheet_b, [v.lower() for v in B], ["accept"] * 10, bom=False)
    assert not sheet_b.read_bytes().startswith(b"\xef\xbb\xbf") and rows[0]["verdict"].islower()
    code, data, _ = score(sample, "--min-kappa", "0.5")
    assert code == 0 and data["kappa"]["verdict"] == pytest.approx(0.6)


def test_single_class_is_undefined_and_fails_the_gate(sample: Path) -> None:
    fill(sample / "sheet_a.csv", sample / "sheet_a.csv", ["ACCEPT"] * 10)
    fill(sample / "sheet_b.csv", sample / "sheet_b.csv", ["accept"] * 10)
    code, data, text = score(sample)
    assert code == 1 and "Traceback" not in text
    assert data["kappa"]["verdict"] is None and data["raw_agreement"]["verdict"] == 1.0
    assert "0/0" in data["kappa_notes"]["verdict"] and "undefined" in text


def test_blank_sheets_are_explained(sample: Path) -> None:
    code, data, text = score(sample)
    assert code == 1 and "Traceback" not in text
    assert data["kappa"]["verdict"] is None and "no item labelled" in data["kappa_notes"]["verdict"]
    assert data["n_labelled"]["verdict"] == {"a": 0, "b": 0}


def test_three_sheets_report_alpha_and_mean_pairwise_kappa(sample: Path) -> None:
    c = ["ACCEPT"] * 5 + ["REVISE"] * 2 + ["REJECT"] * 3
    for name, labels in (("a", A), ("b", B), ("c", c)):
        fill(sample / "sheet_a.csv", sample / f"sheet_{name}.csv", labels)
    code, data, _ = score(sample, "--min-kappa", "0", sheets=("a", "b", "c"))
    assert code == 0 and data["alpha"]["verdict"] is not None
    pairs = [cohen_kappa_score(x, y) for x, y in ((A, B), (A, c), (B, c))]
    assert data["kappa"]["verdict"] == pytest.approx(sum(pairs) / 3)
    assert set(data["pairwise"]) == {"a vs b", "a vs c", "b vs c"}


def _line_of(path: Path, qa_id: str) -> int:
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    return next(i for i, line in enumerate(lines, start=1) if line.startswith(qa_id + ","))


def _bad_label(sample: Path) -> str:
    rows = fill(sample / "sheet_b.csv", sample / "sheet_b.csv", B)
    rows[3]["verdict"] = "maybe"
    write_rows(sample / "sheet_b.csv", rows)
    return f"sheet_b.csv:{_line_of(sample / 'sheet_b.csv', rows[3]['qa_id'])}: verdict: unknown label 'maybe'"


def _bad_criterion(sample: Path) -> str:
    rows = fill(sample / "sheet_b.csv", sample / "sheet_b.csv", B)
    rows[0]["implicit"] = "REVISE"  # a verdict label, not a criterion label
    write_rows(sample / "sheet_b.csv", rows)
    line = _line_of(sample / "sheet_b.csv", rows[0]["qa_id"])
    return f"sheet_b.csv:{line}: implicit: unknown label 'REVISE'"


def _missing_row(sample: Path) -> str:
    rows = read_rows(sample / "sheet_b.csv")
    gone = rows.pop(4)["qa_id"]
    write_rows(sample / "sheet_b.csv", rows)
    return f": qa_id: 1 row(s) of sample {rows[0]['sample_id']} missing: {gone}"


def _duplicate(sample: Path) -> str:
    rows = read_rows(sample / "sheet_b.csv")
    write_rows(sample / "sheet_b.csv", rows + [rows[2]])
    first = _line_of(sample / "sheet_b.csv", rows[2]["qa_id"])
    return f": qa_id: duplicate qa_id {rows[2]['qa_id']} (first on line {first})"


@pytest.mark.parametrize("make", [_bad_label, _bad_criterion, _missing_row, _duplicate])
def test_bad_sheets_fail_in_one_line(sample: Path, make) -> None:  # type: ignore[no-untyped-def]
    fill(sample / "sheet_a.csv", sample / "sheet_a.csv", A)
    expected = make(sample)
    code, _, text = score(sample)
    assert code == 2 and "Traceback" not in text, text
    assert len(text.strip().splitlines()) == 1 and expected in text, text
    assert text.startswith("dimobench: error: ") and "sheet_b.csv:" in text


@pytest.mark.parametrize("with_sample_file", [True, False])
def test_sheets_from_different_samples(sample: Path, dimo_suite: Path, with_sample_file: bool) -> None:
    from dimobench.review import sample_suite

    other = sample.parent / "other"
    sample_suite(dimo_suite, other, frac=0.01, seed=99)
    shutil.copy(other / "sheet_a.csv", sample / "sheet_b.csv")
    if not with_sample_file:
        (sample / "sample.jsonl").unlink()
    code, _, text = score(sample)
    assert code == 2 and len(text.strip().splitlines()) == 1, text
    assert "sample_id: sheet is from sample" in text and "different qa_id sets" in text


@pytest.mark.parametrize("case,message", [
    ("one_sheet", "need at least two sheets"),
    ("no_column", "1: verdict: missing column"),
    ("latin1", "not UTF-8"),
    ("no_file", "no such file"),
])
def test_other_bad_input(sample: Path, case: str, message: str) -> None:
    sheets = [str(sample / "sheet_a.csv"), str(sample / "sheet_b.csv")]
    if case == "one_sheet":
        sheets = sheets[:1]
    elif case == "no_column":
        rows = [{k: v for k, v in r.items() if k != "verdict"} for r in read_rows(sample / "sheet_b.csv")]
        write_rows(sample / "sheet_b.csv", rows)
    elif case == "latin1":
        raw = (sample / "sheet_b.csv").read_bytes()[3:]
        (sample / "sheet_b.csv").write_bytes(raw + "é".encode("latin-1"))
    else:
        sheets[1] = str(sample / "sheet_z.csv")
    r = run_cli("review", "score", *sheets, "--out", str(sample / "agreement.json"))
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (sample / "agreement.json").exists()


def _copy_suite(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for f in src.glob("*.*"):
        if f.is_file():
            shutil.copy(f, dst / f.name)
    return dst


def test_adjudicate_merge_then_score_against_the_verifier(sample: Path, dimo_suite: Path,
                                                          tmp_path: Path) -> None:
    from dimobench.suite.schema import CriterionResult, VerdictRecord, VerifierInfo

    fill(sample / "sheet_a.csv", sample / "sheet_a.csv", A)
    fill(sample / "sheet_b.csv", sample / "sheet_b.csv", B)
    adj = sample / "adjudication.csv"
    r = run_cli("review", "adjudicate", str(sample / "sheet_a.csv"), str(sample / "sheet_b.csv"), "--out",
                str(adj))
    assert r.returncode == 0 and "2 disputed" in r.stdout, r.stderr
    rows = read_rows(adj)
    assert [(x["a_verdict"], x["b_verdict"], x["final_verdict"]) for x in rows] == [("ACCEPT", "REJECT", ""),
                                                                                  ("REJECT", "ACCEPT", "")]
    suite = _copy_suite(dimo_suite, tmp_path / "suite")
    r = run_cli("review", "merge", str(adj), "--suite", str(suite))
    assert r.returncode == 2 and "final_verdict: 2 disputed item(s) not settled" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (suite / "human_verdicts.jsonl").exists()
    rows[0]["final_verdict"], rows[1]["final_verdict"] = "reject", "Revise"
    write_rows(adj, rows)
    from dimobench.suite.outdir import lock_folder

    with lock_folder(suite, "suite"):  # another run is rewriting the suite: merge waits for nobody, it refuses
        r = run_cli("review", "merge", str(adj), "--suite", str(suite))
    assert r.returncode == 2 and "in use by another dimobench run" in r.stderr, r.stderr
    assert not (suite / "human_verdicts.jsonl").exists()
    r = run_cli("review", "merge", str(adj), "--suite", str(suite))
    assert r.returncode == 0 and "8 agreed, 2 adjudicated" in r.stdout, r.stderr
    human = [json.loads(x) for x in (suite / "human_verdicts.jsonl").read_text().splitlines()]
    assert len(human) == 10
    settled = {h["qa_id"]: h["verdict"] for h in human}
    assert settled[rows[0]["qa_id"]] == "REJECT" and settled[rows[1]["qa_id"]] == "REVISE"
    manifest = json.loads((suite / "manifest.json").read_text())
    digest = hashlib.sha256((suite / "human_verdicts.jsonl").read_bytes()).hexdigest()
    assert manifest["files"]["human_verdicts.jsonl"] == digest
    assert run_cli("validate", str(suite)).returncode == 0
    # the verifier says ACCEPT on every sampled item: it agrees with the people where they settled ACCEPT
    info = VerifierInfo(provider="offline", model="test", prompt_hash=None)
    crit = {"supported": CriterionResult(verdict="ACCEPT", explanation="ok")}
    verdicts = [VerdictRecord(qa_id=q, verdict="ACCEPT", criteria=crit, verifier=info) for q in settled]
    (suite / "verdicts.jsonl").write_text("".join(v.model_dump_json() + "\n" for v in verdicts))
    code, data, text = score(sample, "--suite", str(suite), "--min-kappa", "0.5")
    assert code == 0, text
    v = data["verifier"]
    share = sum(x == "ACCEPT" for x in settled.values()) / 10
    assert v["source"] == "human_verdicts.jsonl" and v["agreement"] == share and v["n"] == 10
    assert v["per_annotator"]["a"]["agreement"] == 0.5
    assert v["per_criterion"]["supported"]["a"]["agreement"] == 1
    assert "verifier agrees with the people on" in text and "96.9%" in (sample / "agreement.md").read_text()


def test_merge_rejects_an_adjudication_of_another_sample(sample: Path, dimo_suite: Path,
                                                         tmp_path: Path) -> None:
    fill(sample / "sheet_a.csv", sample / "sheet_a.csv", A)
    fill(sample / "sheet_b.csv", sample / "sheet_b.csv", B)
    adj = sample / "adjudication.csv"
    assert run_cli("review", "adjudicate", str(sample / "sheet_a.csv"), str(sample / "sheet_b.csv"), "--out",
                   str(adj)).returncode == 0
    rows = read_rows(adj)
    for row in rows:
        row["sample_id"], row["final_verdict"] = "0123456789ab", "ACCEPT"
    write_rows(adj, rows)
    r = run_cli("review", "merge", str(adj), "--suite", str(_copy_suite(dimo_suite, tmp_path / "s")))
    assert r.returncode == 2 and f"{adj.name}:2: sample_id: adjudication of sample 0123456789ab" in r.stderr
