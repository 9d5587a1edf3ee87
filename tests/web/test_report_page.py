"""report.html in a real headless Chromium, opened from disk: curves, toggles, filters, drill-down, inert markup."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from dimobench.evaluate.api import EvalConfig, evaluate
from dimobench.evaluate.html import load_run, page_data, render

SYSTEMS = ["none", "recency", "oracle"]
PLANTED = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"


@pytest.fixture(scope="module")
def evaluation(small_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval") / "run"
    evaluate(EvalConfig(suites=[small_suite], systems=SYSTEMS, embedding="hashing", bootstrap=0, plots=False), out)
    return out


def rows(out: Path, system: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / f"answers-{system}.jsonl").read_text().splitlines()]


def open_page(page: Any, path: Path) -> tuple[float, list[str], list[str]]:
    """Open ``path`` from disk; seconds until the page is ready, page errors, and every non-file request."""
    errors: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: None if r.url.startswith("file://") else requests.append(r.url))
    t0 = time.perf_counter()
    page.goto(path.resolve().as_uri(), wait_until="load")
    page.wait_for_selector("body[data-ready='1']", timeout=10_000)
    return time.perf_counter() - t0, errors, requests


def test_report_page_curves_filters_and_drill_down(page: Any, screenshot_dir: Path, evaluation: Path) -> None:
    seconds, errors, requests = open_page(page, evaluation / "report.html")
    assert seconds < 3
    curves = page.locator("path.curve")
    assert sorted(curves.evaluate_all("els => els.map(e => e.dataset.system)")) == sorted(SYSTEMS)
    # a legend click hides one system's curve and brings it back
    box = page.locator("#legend input[data-system='recency']")
    box.uncheck()
    assert not page.locator("path.curve[data-system='recency']").is_visible()
    assert page.locator("path.curve[data-system='oracle']").is_visible()
    box.check()
    assert page.locator("path.curve[data-system='recency']").is_visible()
    # hovering the chart shows each system's value at the nearest window
    chart = page.locator("#chart svg").bounding_box()
    page.mouse.move(chart["x"] + chart["width"] / 2, chart["y"] + chart["height"] / 2)
    tip = page.locator("#tooltip")
    assert tip.is_visible() and "oracle: " in tip.inner_text() and "%" in tip.inner_text()

    # the question table, filtered to the incorrect answers of one system, holds exactly those
    total = len(rows(evaluation, "recency"))
    assert page.locator("#q-count").inner_text() == f"{total} of {total} questions"
    wrong = [r for r in rows(evaluation, "recency") if r["correct"] is False]
    page.select_option("#f-system", "recency")
    page.select_option("#f-outcome", "incorrect")
    assert page.locator("#q-count").inner_text() == f"{len(wrong)} of {total} questions"
    table = page.locator("#questions tbody tr")
    assert table.count() == len(wrong) and 0 < len(wrong) < 500
    assert table.evaluate_all("trs => trs.map(t => t.cells[0].textContent)") == [r["qa_id"] for r in wrong]
    stale = [r for r in rows(evaluation, "oracle") if r["stale_index"] is not None and r["chosen"] == r["stale_index"]]
    page.select_option("#f-system", "oracle")
    page.select_option("#f-outcome", "stale")
    assert page.locator("#q-count").inner_text() == f"{len(stale)} of {total} questions"
    page.select_option("#f-system", "recency")
    page.select_option("#f-outcome", "incorrect")

    # drill-down: options, gold, every system's choice, and two systems' recalled items side by side
    row = wrong[0]
    table.first.click()
    assert page.locator("#detail").is_visible()
    assert page.locator("#d-question").inner_text() == row["question"]
    options = page.locator("#d-options li")
    assert options.evaluate_all("lis => lis.map(l => l.firstChild.textContent)") == row["options"]
    gold = page.locator(f"#d-options li[data-option='{row['answer_index']}'] .badge.gold")
    assert gold.count() == 1
    for system in SYSTEMS:
        chosen = next(r for r in rows(evaluation, system) if r["qa_id"] == row["qa_id"])["chosen"]
        assert page.locator(f"#d-options li[data-option='{chosen}'] .badge.pick[data-system='{system}']").count() == 1
    page.select_option("#d-left", "recency")
    page.select_option("#d-right", "oracle")
    cols = page.locator("#d-side .recall-col")
    assert cols.evaluate_all("cs => cs.map(c => c.dataset.system)") == ["recency", "oracle"]
    for i, system in enumerate(["recency", "oracle"]):
        mine = next(r for r in rows(evaluation, system) if r["qa_id"] == row["qa_id"])
        items = cols.nth(i).locator(".recalled li")
        assert items.count() == len(mine["recalled"]) > 0
        assert items.locator(".text").all_inner_texts() == [it["text"] for it in mine["recalled"]]
        assert items.first.locator(".score").inner_text() == f"{mine['recalled'][0]['score']:.3f}"
        verdict = "correct" if mine["correct"] else "incorrect"
        assert f"({verdict})" in cols.nth(i).locator(".choice").inner_text()
    page.screenshot(path=str(screenshot_dir / "report-html.png"), full_page=True)
    assert errors == [] and requests == []


def test_planted_markup_is_shown_as_text(page: Any, evaluation: Path, tmp_path: Path) -> None:
    run = load_run(evaluation)
    for system in SYSTEMS:
        run.answers[system][0]["question"] = PLANTED
    run.answers["recency"][0]["recalled"][0]["text"] = PLANTED
    (tmp_path / "report.html").write_text(render(page_data([run], PLANTED)), encoding="utf-8")
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    _, errors, requests = open_page(page, tmp_path / "report.html")
    assert page.title() == PLANTED
    page.fill("#f-text", "alert(1)")
    assert page.locator("#questions tbody tr").count() == 1
    page.locator("#questions tbody tr").first.click()
    page.select_option("#d-left", "recency")
    assert page.locator("#d-question").inner_text() == PLANTED
    assert page.locator("#d-side .recall-col[data-system='recency'] .recalled .text").first.inner_text() == PLANTED
    assert page.evaluate("document.scripts.length") == 2 and page.locator("img").count() == 0
    assert dialogs == [] and errors == [] and requests == []


def test_compare_page_shows_both_runs(page: Any, evaluation: Path, tmp_path: Path) -> None:
    from dimobench.evaluate.api import compare

    compare(evaluation, evaluation, n=0, out=tmp_path / "cmp")
    seconds, errors, requests = open_page(page, tmp_path / "cmp" / "report.html")
    keys = [f"{run}:{s}" for run in "AB" for s in SYSTEMS]
    assert page.locator("path.curve").evaluate_all("els => els.map(e => e.dataset.system)") == keys
    assert page.locator("#legend .legend-item").all_inner_texts() == [f"{s} ({run})" for run in "AB" for s in SYSTEMS]
    assert page.locator("#tables h3").first.inner_text().startswith("B - A")
    page.select_option("#f-system", "B:oracle")
    page.select_option("#f-outcome", "correct")
    right = sum(bool(r["correct"]) for r in rows(evaluation, "oracle"))
    assert page.locator("#q-count").inner_text().startswith(f"{right} of ")
    assert seconds < 3 and errors == [] and requests == []
