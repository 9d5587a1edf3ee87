"""report.html: written by every evaluation, self-contained, its embedded JSON faithful and inert; compare --out."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dimobench.cli.app import app
from dimobench.evaluate.api import EvalConfig, evaluate
from dimobench.evaluate.html import RunView, load_run, markdown_tables, render, script_json

SYSTEMS = ["none", "recency", "oracle"]
PLANTED = "</script><script>alert(1)</script><!-- & <b>bold</b>"
DATA = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.DOTALL)


def page_json(html: str) -> Any:
    found = DATA.findall(html)
    assert len(found) == 1
    return json.loads(found[0])


def answer_rows(out: Path, system: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / f"answers-{system}.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def evaluation(small_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval") / "run"
    evaluate(EvalConfig(suites=[small_suite], systems=SYSTEMS, embedding="hashing", bootstrap=0, plots=False), out)
    return out


def test_every_evaluation_writes_a_self_contained_page(evaluation: Path) -> None:
    html = (evaluation / "report.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    # nothing is fetched: no external src/href, no stylesheet link, no url(), no fetch call, and a CSP that forbids it
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.IGNORECASE)
    assert not re.search(r"<link\b|@import|url\(|\bfetch\(|XMLHttpRequest|<iframe", html, re.IGNORECASE)
    assert "default-src 'none'" in html
    assert (evaluation / "report.md").is_file() and (evaluation / "report.json").is_file()
    assert not list(evaluation.glob(".*.tmp"))  # written atomically like the other outputs


def test_embedded_json_round_trips_the_answers(evaluation: Path) -> None:
    data = page_json((evaluation / "report.html").read_text(encoding="utf-8"))
    assert [s["key"] for s in data["systems"]] == SYSTEMS
    texts, questions = data["texts"], data["questions"]
    assert len(texts) == len(set(texts))  # each text once
    for system in SYSTEMS:
        rows = answer_rows(evaluation, system)
        assert len(rows) == len(questions)
        for row, q, a in zip(rows, questions, data["answers"][system], strict=True):
            assert (q["id"], q["s"], q["t"], q["ty"], q["ph"]) == (row["qa_id"], row["suite"], row["ask_turn"],
                                                                   row["qa_type"], row["phase"])
            assert texts[q["q"]] == row["question"] and [texts[o] for o in q["o"]] == row["options"]
            assert (q["g"], q["st"], q["cf"]) == (row["answer_index"], row["stale_index"], row["confounder_index"])
            assert a[0] == row["chosen"] and a[1] == (None if row["correct"] is None else int(row["correct"]))
            recalled = [(texts[a[2][i]], a[2][i + 1], a[2][i + 2]) for i in range(0, len(a[2]), 3)]
            assert recalled == [(it["text"], round(it["score"], 3), it["source_turns"]) for it in row["recalled"]]
    suite = data["suites"]["small"]
    assert set(suite["curves"]) == set(SYSTEMS) and suite["change_points"] and suite["turns"] == 300


def test_tables_are_those_of_report_md(evaluation: Path) -> None:
    md = (evaluation / "report.md").read_text(encoding="utf-8")
    data = page_json((evaluation / "report.html").read_text(encoding="utf-8"))
    headings = ["Headline"] + [x[3:] for x in md.splitlines() if x.startswith("## ") and x != "## Configuration"]
    assert [t["title"] for t in data["tables"]] == headings == [t["title"] for t in markdown_tables(md)]
    for t in data["tables"]:
        assert [r[0] for r in t["rows"]] == SYSTEMS
        assert all(len(r) == len(t["columns"]) for r in t["rows"])
        for r in t["rows"]:  # every cell as report.md prints it
            assert "| " + " | ".join(r) + " |" in md
    assert data["tables"][0]["columns"][:2] == ["system", "overall"]


def test_planted_markup_in_a_question_stays_inert(evaluation: Path) -> None:
    run = load_run(evaluation)
    run.answers["none"][0]["question"] = PLANTED
    run.answers["none"][0]["recalled"] = [{"text": PLANTED, "score": 0.5, "source_turns": [1]}]
    html = render(_data(run))
    assert PLANTED not in html and "<script>alert(1)" not in html
    assert html.count("</script>") == 2  # the data block's and the page script's own
    data = page_json(html)
    assert PLANTED in data["texts"]
    assert script_json({"x": PLANTED}) == '{"x":"\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script' \
                                          '\\u003e\\u003c!-- \\u0026 \\u003cb\\u003ebold\\u003c/b\\u003e"}'


def _data(run: RunView) -> dict[str, Any]:
    from dimobench.evaluate.html import page_data

    return page_data([run], "planted")


def test_compare_out_writes_both_runs_in_one_page(evaluation: Path, small_suite: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other"
    evaluate(EvalConfig(suites=[small_suite], systems=["none", "bm25"], embedding="hashing", bootstrap=0,
                        plots=False), other)
    monkeypatch.chdir(tmp_path)
    plain = CliRunner().invoke(app, ["compare", str(evaluation), str(other), "--bootstrap", "50"])
    assert plain.exit_code == 0, plain.output
    assert "report.html" not in plain.output and [p.name for p in tmp_path.iterdir()] == ["other"]
    cmp_dir = tmp_path / "cmp"
    res = CliRunner().invoke(app, ["compare", str(evaluation), str(other), "--bootstrap", "50", "--out", str(cmp_dir)])
    assert res.exit_code == 0, res.output
    assert res.output == plain.output + f"wrote {cmp_dir}/report.html\n"  # same lines, plus where the page went
    data = page_json((cmp_dir / "report.html").read_text(encoding="utf-8"))
    assert [s["key"] for s in data["systems"]] == ["A:none", "A:recency", "A:oracle", "B:none", "B:bm25"]
    assert [(s["run"], s["name"]) for s in data["systems"]][-1] == ("B", "bm25")
    first = data["tables"][0]
    assert first["title"].startswith("B - A") and [r[0] for r in first["rows"]] == ["none"]
    assert "only in A: recency, oracle" in first["note"] and "only in B: bm25" in first["note"]
    assert [r[0] for r in data["tables"][1]["rows"]] == [s["key"] for s in data["systems"]]
    assert set(data["suites"]["small"]["curves"]) == {s["key"] for s in data["systems"]}
    assert all(len(col) == len(data["questions"]) for col in data["answers"].values())
    # the folder is claimed like every output: a rerun needs --force, a foreign folder is refused
    again = CliRunner().invoke(app, ["compare", str(evaluation), str(other), "--out", str(cmp_dir)])
    assert again.exit_code == 2 and "--force" in again.output
    assert CliRunner().invoke(app, ["compare", str(evaluation), str(other), "--bootstrap", "0", "--out",
                                    str(cmp_dir), "--force"]).exit_code == 0
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    res = CliRunner().invoke(app, ["compare", str(evaluation), str(other), "--out", str(foreign)])
    assert res.exit_code == 2 and "not written by dimobench" in res.output
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]
