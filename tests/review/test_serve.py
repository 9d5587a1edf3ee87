"""`review serve` through Flask's test client and as a real process: saves land in the CSV sheet the CSV flow
reads, a restart resumes, only this machine and this annotator get in, suite text is never HTML."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from dimobench.errors import InputError
from dimobench.review.itemview import spans
from dimobench.review.serve import WEB_DIR, create_app, is_loopback
from dimobench.review.sheets import CRITERIA, FIELDS, read_csv, read_sheet, write_csv
from dimobench.suite.load import load_suite
from dimobench.suite.schema import CriterionResult, VerdictRecord, VerifierInfo
from tests.helpers.cli import run_cli


@pytest.fixture(scope="session")
def served_sample(small_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 12-item sample of the small suite with blank sheets a and b (copied per test: tests write)."""
    from dimobench.api import sample_review

    out = tmp_path_factory.mktemp("serve") / "sample"
    sample, _ = sample_review(small_suite, out, frac=0.03, calibration=3, seed=4)
    assert 5 <= len(sample.items) <= 20
    return out


@pytest.fixture
def sample(served_sample: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(served_sample, tmp_path / "sample"))


@pytest.fixture
def client(sample: Path, small_suite: Path) -> Any:
    return create_app(sample, "a", small_suite).test_client()


def post(client: Any, **body: Any) -> Any:
    return client.post("/api/label", json={"annotator": "a", **body})


def label_item(client: Any, qa_id: str, value: str = "ACCEPT", verdict: str = "ACCEPT") -> None:
    for f in CRITERIA:
        assert post(client, qa_id=qa_id, field=f, value=value).status_code == 200
    assert post(client, qa_id=qa_id, field="verdict", value=verdict).status_code == 200


def test_each_save_writes_the_sheet_the_csv_flow_reads(client: Any, sample: Path) -> None:
    blank_a, blank_b = (sample / "sheet_a.csv").read_bytes(), (sample / "sheet_b.csv").read_bytes()
    state = client.get("/api/state").get_json()
    assert state["order"] == list(FIELDS) and state["sheet"] == "sheet_a.csv" and state["labelled"] == 0
    qa_id = state["items"][1]["qa_id"]
    r = post(client, qa_id=qa_id, field="verdict", value="revise")  # any case, as in the CSV
    assert r.status_code == 200 and r.get_json()["labels"]["verdict"] == "REVISE"
    assert read_sheet(sample / "sheet_a.csv").labels[qa_id]["verdict"] == "REVISE"
    assert post(client, qa_id=qa_id, field="supported", value="UNSCORED").status_code == 200
    note = '=HYPERLINK("http://x") said "hi",\nsecond line'
    assert post(client, qa_id=qa_id, field="note", value=note).status_code == 200
    sheet = read_sheet(sample / "sheet_a.csv")
    assert sheet.labels[qa_id]["supported"] == "UNSCORED" and sheet.notes[qa_id] == note.strip()
    assert "'=HYPERLINK" in (sample / "sheet_a.csv").read_text("utf-8-sig")  # formula-escaped as write_csv does
    assert (sample / "sheet_b.csv").read_bytes() == blank_b
    # clearing everything again gives the very bytes `review sample` wrote
    for field, value in (("verdict", None), ("supported", ""), ("note", "")):
        assert post(client, qa_id=qa_id, field=field, value=value).status_code == 200
    assert (sample / "sheet_a.csv").read_bytes() == blank_a
    assert not list(sample.glob(".sheet_a.csv.*"))  # no temp file left behind by the atomic write


def test_saved_sheets_score_like_csv_filled_ones(client: Any, sample: Path, tmp_path: Path) -> None:
    from dimobench.api import score_review

    ids = [it["qa_id"] for it in client.get("/api/state").get_json()["items"]]
    verdicts = ["ACCEPT", "REJECT", "REVISE"] * len(ids)
    for q, v in zip(ids, verdicts):
        label_item(client, q, "ACCEPT" if v != "REJECT" else "REJECT", v)
    rows, _, header = read_csv(sample / "sheet_b.csv", ())
    for (_, row), q, v in zip(rows, ids, reversed(verdicts[: len(ids)])):
        assert row["qa_id"] == q
        row.update({f: "ACCEPT" for f in CRITERIA}, verdict=v)
    write_csv(sample / "sheet_b.csv", header, [r for _, r in rows])
    res = score_review([sample / "sheet_a.csv", sample / "sheet_b.csv"], tmp_path / "agreement.json")
    assert res["kappa"]["verdict"] is not None and res["gate"]["value"] == res["kappa"]["verdict"]


def test_a_restart_resumes_at_the_first_unlabelled_item(client: Any, sample: Path, small_suite: Path) -> None:
    ids = [it["qa_id"] for it in client.get("/api/state").get_json()["items"]]
    label_item(client, ids[0])
    label_item(client, ids[1])
    post(client, qa_id=ids[3], field="verdict", value="ACCEPT")  # partly labelled is not labelled
    state = client.get("/api/state").get_json()
    assert (state["first_unlabelled"], state["labelled"], state["total"]) == (2, 2, len(ids))
    assert [it["status"] for it in state["items"][:4]] == ["done", "done", "todo", "partial"]
    again = create_app(sample, "a", small_suite).test_client()  # a new server on the same sheet
    state = again.get("/api/state").get_json()
    assert state["first_unlabelled"] == 2 and state["labelled"] == 2
    item = again.get("/api/item/0").get_json()
    assert item["done"] and item["labels"] == {f: "ACCEPT" for f in FIELDS}
    assert again.get(f"/api/item/{len(ids)}").status_code == 404


def test_an_item_shows_its_sheet_row_and_the_dialogue_up_to_the_ask_turn(client: Any, sample: Path,
                                                                          small_suite: Path) -> None:
    suite = load_suite(small_suite)
    by_id = {q.qa_id: q for q in suite.qa}
    rows, _, _ = read_csv(sample / "sheet_a.csv", ())
    for i, (_, row) in enumerate(rows):
        item = client.get(f"/api/item/{i}").get_json()
        assert item["info"] == {k: row[k] for k in item["info"]} and item["info"]["question"] == row["question"]
        assert set(item) >= {"dialogue", "trait_history", "labels", "note"}
        q = by_id[row["qa_id"]]
        shown = [t for span in item["dialogue"] for t in span]
        assert {t["turn"] for t in shown if t["evidence"]} == {t for t in q.evidence_turns if t <= q.ask_turn}
        assert max(t["turn"] for t in shown) == q.ask_turn and [t["turn"] for t in shown if t["ask"]] == [q.ask_turn]
        for t in shown + item["trait_history"]:
            assert set(t) == {"turn", "timestamp", "speaker", "user", "assistant", "evidence", "ask"}
            assert t["turn"] <= q.ask_turn
        annotated = [t.turn for t in suite.turns_of(q.persona_id) if t.annotation and t.turn <= q.ask_turn
                     and t.annotation.trait_id == q.trait_id]
        assert [t["turn"] for t in item["trait_history"]] == annotated


def test_spans_merge_and_stop_at_the_ask_turn() -> None:
    assert spans([10], 12) == [(8, 12)]
    assert spans([10, 14], 40) == [(8, 16), (38, 40)]
    assert spans([1, 50], 3) == [(1, 3)]  # evidence after the ask turn is never shown
    assert spans([], 2) == [(1, 2)]


def test_verifier_verdicts_never_reach_the_page(sample: Path, small_suite: Path, tmp_path: Path) -> None:
    marker = "VERIFIER-SAYS-SECRET"
    suite = load_suite(small_suite)
    crit = {c: CriterionResult(verdict="REJECT", explanation=marker) for c in CRITERIA}
    info = VerifierInfo(provider="offline", model=marker, prompt_hash=None)
    verified = tmp_path / "suite"
    verified.mkdir()
    for f in small_suite.glob("*.*"):
        if f.is_file():
            (verified / f.name).write_bytes(f.read_bytes())
    (verified / "verdicts.jsonl").write_text("".join(
        VerdictRecord(qa_id=q.qa_id, verdict="REVISE", criteria=crit, verifier=info).model_dump_json() + "\n"
        for q in suite.qa))
    c = create_app(sample, "a", verified).test_client()
    items = "".join(c.get(f"/api/item/{i}").get_data(as_text=True) for i in range(3))
    seen = c.get("/api/state").get_data(as_text=True) + items
    assert marker not in seen and "REVISE" not in items  # the state names REVISE only as a verdict label
    assert '"kind"' not in seen and '"state_id"' not in seen  # nor the turns' annotations


def test_another_annotators_sheet_and_paths_are_refused(client: Any, sample: Path) -> None:
    blank_b = (sample / "sheet_b.csv").read_bytes()
    qa_id = client.get("/api/state").get_json()["items"][0]["qa_id"]
    r = client.post("/api/label", json={"annotator": "b", "qa_id": qa_id, "field": "verdict", "value": "ACCEPT"})
    assert r.status_code == 403 and "only the sheet of 'a'" in r.get_json()["error"]
    assert client.post("/api/label", json={"qa_id": qa_id, "field": "verdict", "value": "ACCEPT"}).status_code == 403
    assert client.get("/api/state?annotator=b").status_code == 403
    for path in ("/sheet_b.csv", "/static/../sheet_b.csv", "/static/%2e%2e/sheet_b.csv", "/static/..%2fsheet_b.csv",
                 "/static//etc/passwd", "/api/item/../../sheet_b.csv", "/static/../../sample/sheet_a.csv"):
        r = client.get(path, follow_redirects=True)
        assert r.status_code == 404, path
        assert b"qa_id" not in r.data and b"root:" not in r.data
    # the sheet's information columns are not editable, only labels and the note
    for field in ("question", "gold", "qa_id", "sample_id", "../sheet_b.csv"):
        r = post(client, qa_id=qa_id, field=field, value="ACCEPT")
        assert r.status_code == 400 and "unknown column" in r.get_json()["error"]
    assert post(client, qa_id="no-such-item", field="verdict", value="ACCEPT").status_code == 400
    assert post(client, qa_id=qa_id, field="verdict", value="UNSCORED").status_code == 400  # not a verdict
    assert post(client, qa_id=qa_id, field="supported", value="MAYBE").status_code == 400
    assert (sample / "sheet_b.csv").read_bytes() == blank_b
    assert read_sheet(sample / "sheet_a.csv").labels[qa_id]["verdict"] is None
    for name in ("../sample/sheet_b", "b/../a", "sheet_b.csv", "", "c"):
        with pytest.raises(InputError):
            create_app(sample, name)


def test_only_this_machine_and_only_json_posts_get_in(sample: Path) -> None:
    c = create_app(sample, "a").test_client()
    assert c.get("/api/state").status_code == 200
    assert c.get("/api/state", environ_overrides={"REMOTE_ADDR": "10.0.0.7"}).status_code == 403
    assert c.get("/", environ_overrides={"REMOTE_ADDR": "192.168.1.5"}).status_code == 403
    assert c.get("/api/state", headers={"Host": "evil.example:8765"}).status_code == 403  # DNS rebinding
    assert c.get("/api/state", headers={"Host": "[::1]:8765"}).status_code == 200
    qa_id = c.get("/api/state").get_json()["items"][0]["qa_id"]
    body = json.dumps({"annotator": "a", "qa_id": qa_id, "field": "verdict", "value": "ACCEPT"})
    assert c.post("/api/label", data=body, content_type="text/plain").status_code == 415  # a cross-site form
    assert c.post("/api/label", data=body, content_type="application/json",
                  headers={"Origin": "http://evil.example"}).status_code == 403
    assert c.post("/api/label", data=body, content_type="application/json",
                  headers={"Origin": "http://localhost"}).status_code == 200
    shared = create_app(sample, "a", allow_remote=True).test_client()
    assert shared.get("/api/state", environ_overrides={"REMOTE_ADDR": "10.0.0.7"}).status_code == 200
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.5.0.1", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "10.0.0.7", "::", "example.org", ""))


def test_sheet_and_suite_text_is_shown_as_text(sample: Path) -> None:
    planted = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
    rows, _, header = read_csv(sample / "sheet_a.csv", ())
    rows[0][1]["question"] = planted
    write_csv(sample / "sheet_a.csv", header, [r for _, r in rows])
    c = create_app(sample, "a").test_client()
    r = c.get("/api/item/0")
    assert r.mimetype == "application/json" and r.get_json()["info"]["question"] == planted
    page = c.get("/")
    assert page.mimetype == "text/html" and b"pwned" not in page.data  # the page is static; data comes as JSON
    csp = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    script = (WEB_DIR / "app.js").read_text()
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(", script)
    assert not re.search(r"https?://", (WEB_DIR / "index.html").read_text() + script)  # nothing from a CDN


def test_no_suite_shows_the_sheet_cells(client: Any, sample: Path) -> None:
    c = create_app(sample, "a").test_client()
    item = c.get("/api/item/0").get_json()
    assert "dialogue" not in item and item["info"]["evidence"].startswith("t")
    assert c.get("/api/state").get_json()["has_suite"] is False


def test_the_sample_remembers_its_suite_for_serve(sample: Path, small_suite: Path) -> None:
    from dimobench.review.workflow import sample_source

    assert sample_source(sample) == small_suite.resolve()
    (sample / "source.json").write_text(json.dumps({"suite": str(sample / "gone")}))
    assert sample_source(sample) is None  # a moved suite: serve falls back to the sheet's cells


def test_a_sample_of_another_suite_or_sample_is_refused(sample: Path, tmp_path: Path) -> None:
    from tests.helpers.suites import generate

    other = generate(tmp_path / "other", turns=60, personas=1, seed=2)
    with pytest.raises(InputError, match="not a question of this suite"):
        create_app(sample, "a", other)
    rows = [json.loads(line) for line in (sample / "sample.jsonl").read_text().splitlines()]
    (sample / "sample.jsonl").write_text("".join(json.dumps({**r, "sample_id": "0" * 12}) + "\n" for r in rows))
    with pytest.raises(InputError, match="not from sample 000000000000"):
        create_app(sample, "a")


@pytest.mark.parametrize("args,message", [
    (["{missing}", "--annotator", "a"], "no such sample folder"),
    (["{sample}", "--annotator", "zed"], "no sheet for annotator 'zed' (annotators here: a, b)"),
    (["{sample}", "--annotator", "../x"], "is not an annotator name"),
    (["{sample}", "--annotator", "a", "--suite", "{missing}"], "missing"),
    (["{sample}", "--annotator", "a", "--port", "70000"], "cannot listen on 127.0.0.1:70000"),
    (["{sample}", "--annotator", "a", "--port", "-1"], "--port must be at least 0"),
])
def test_bad_input_is_one_line_and_exit_2(sample: Path, tmp_path: Path, args: list[str], message: str) -> None:
    filled = [a.format(sample=sample, missing=tmp_path / "missing") for a in args]
    r = run_cli("review", "serve", *filled)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_bad_label_in_the_sheet_fails_at_start(sample: Path) -> None:
    rows, _, header = read_csv(sample / "sheet_a.csv", ())
    rows[1][1]["verdict"] = "MAYBE"
    write_csv(sample / "sheet_a.csv", header, [r for _, r in rows])
    r = run_cli("review", "serve", str(sample), "--annotator", "a")
    assert r.returncode == 2 and re.search(r"sheet_a\.csv:\d+: verdict: unknown label 'MAYBE'", r.stderr)


def test_the_command_serves_until_stopped_and_a_busy_port_is_one_line(sample: Path, small_suite: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "dimobench", "review", "serve", str(sample), "--annotator", "b",
                             "--suite", str(small_suite), "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        assert "0 of" in lines[0] and "sheet_b.csv" in lines[0]
        url = re.search(r"http://127\.0\.0\.1:(\d+)/", lines[1])
        assert url, lines
        with urllib.request.urlopen(url.group(0) + "api/state", timeout=10) as resp:
            assert json.load(resp)["annotator"] == "b"
        r = run_cli("review", "serve", str(sample), "--annotator", "a", "--port", url.group(1))
        assert r.returncode == 2 and f"cannot listen on 127.0.0.1:{url.group(1)}" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_cli_start_up_does_not_import_flask() -> None:
    code = "import sys, dimobench.cli.app; print(sorted(m for m in ('flask', 'werkzeug') if m in sys.modules))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stderr

