"""`review serve` in a real headless Chromium: label three items with the keyboard, reload, the labels are kept,
and the saved sheet scores exactly like the same labels written through the CSV flow."""

from __future__ import annotations

import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dimobench.review.serve import create_app
from dimobench.review.sheets import CRITERIA, FIELDS, read_csv, read_sheet, write_csv
from tests.helpers.review_sheets import read_rows, write_rows

PLANTED = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> Which city now?'
# what three items get, typed as keys: six criteria then the verdict (a label moves to the next row)
KEYS = [list("aaruaa") + ["v"], list("aaaaaa") + ["a"], list("rrrrrr") + ["r"]]
LABELS = [
    dict(zip(FIELDS, ["ACCEPT", "ACCEPT", "REJECT", "UNSCORED", "ACCEPT", "ACCEPT", "REVISE"])),
    {f: "ACCEPT" for f in FIELDS},
    {f: "REJECT" for f in FIELDS},
]
NOTE = "checked the move twice"
OTHER = ["REVISE", "ACCEPT", "ACCEPT"]
"""Annotator b's verdicts on the same three items (b accepts every criterion)."""


@pytest.fixture
def sample(small_suite: Path, tmp_path: Path) -> Path:
    from dimobench.api import sample_review

    out = tmp_path / "sample"
    sample_review(small_suite, out, frac=0.03, calibration=3, seed=4)
    # a question carrying HTML: the page must show it as text and never run it
    rows, _, header = read_csv(out / "sheet_a.csv", ())
    rows[0][1]["question"] = PLANTED
    write_csv(out / "sheet_a.csv", header, [r for _, r in rows])
    write_csv(out / "sheet_b.csv", header, [r for _, r in rows])
    return out


@pytest.fixture
def served(sample: Path, small_suite: Path) -> Iterator[str]:
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, create_app(sample, "a", small_suite), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.port}/"
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()


def open_page(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']", timeout=15000)


def at_item(page: Any, n: int) -> None:
    """Wait until item ``n`` is on screen (a locator wait: the page's CSP forbids the string-eval kind)."""
    from playwright.sync_api import expect

    expect(page.locator("#meta")).to_contain_text(re.compile(rf"^Item {n} of"))


def pressed(page: Any) -> dict[str, str | None]:
    """The label each row shows as chosen, read from the page."""
    out: dict[str, str | None] = {}
    for field in FIELDS:
        on = page.locator(f"#fields .field[data-field='{field}'] button[aria-pressed='true']")
        out[field] = on.get_attribute("data-label") if on.count() else None
    return out


def test_keyboard_labels_survive_a_reload_and_score_like_the_csv_flow(page: Any, served: str, sample: Path,
                                                                     tmp_path: Path, screenshot_dir: Path) -> None:
    from playwright.sync_api import expect

    from dimobench.api import score_review

    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    open_page(page, served)
    total = len(read_rows(sample / "sheet_a.csv"))
    assert page.locator("#progress").text_content() == f"0 of {total} labelled"
    assert page.locator("#meta").text_content().startswith(f"Item 1 of {total}")
    # the planted markup is text on the page, and none of it ran
    assert page.locator("#question").text_content() == PLANTED
    assert page.locator("#question script, #question img").count() == 0
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.locator(".turn.evidence").count() >= 1 and page.locator(".turn.ask").count() == 1

    for i, keys in enumerate(KEYS):
        at_item(page, i + 1)
        for key in keys:
            page.keyboard.press(key)
        if i == 0:
            page.keyboard.press("c")
            page.keyboard.type(NOTE)
            page.keyboard.press("Escape")
        assert pressed(page) == LABELS[i]
        page.keyboard.press("n")
    expect(page.locator("#progress")).to_have_text(f"3 of {total} labelled")
    assert page.locator("#saved").text_content() == "saved to sheet_a.csv"

    page.reload()
    page.wait_for_selector("body[data-ready='1']", timeout=15000)
    assert page.locator("#meta").text_content().startswith(f"Item 4 of {total}")  # resumes at the first unlabelled
    assert page.locator("#progress").text_content() == f"3 of {total} labelled"
    for i in range(3):
        page.keyboard.press("g")
        page.keyboard.type(str(i + 1))
        page.keyboard.press("Enter")
        at_item(page, i + 1)
        assert pressed(page) == LABELS[i]
        assert page.locator("#note").input_value() == (NOTE if i == 0 else "")
    page.keyboard.press("g")  # the README's picture: an ordinary question, labelled
    page.keyboard.type("2")
    page.keyboard.press("Enter")
    at_item(page, 2)
    page.keyboard.press("h")
    assert page.locator("#history").get_attribute("open") is not None
    page.keyboard.press("7")
    page.screenshot(path=str(screenshot_dir / "review-app.png"), full_page=False)
    assert errors == []

    # the sheet on disk holds the labels, and scores exactly as the CSV flow does
    sheet = read_sheet(sample / "sheet_a.csv")
    ids = list(sheet.lines)
    assert [sheet.labels[q] for q in ids[:3]] == LABELS and sheet.notes == {ids[0]: NOTE}
    assert all(v is None for q in ids[3:] for v in sheet.labels[q].values())
    rows_b = read_rows(sample / "sheet_b.csv")
    for row, verdict in zip(rows_b, OTHER):
        row.update({c: "ACCEPT" for c in CRITERIA}, verdict=verdict)
    write_rows(sample / "sheet_b.csv", rows_b)
    by_csv = Path(shutil.copytree(sample, tmp_path / "csv-flow", ignore=shutil.ignore_patterns(".dimobench")))
    rows_a = read_rows(by_csv / "sheet_a.csv")
    for row in rows_a:
        row.update({f: "" for f in FIELDS}, note="")
    for row, labels in zip(rows_a, LABELS):
        row.update(labels)
    rows_a[0]["note"] = NOTE
    write_rows(by_csv / "sheet_a.csv", rows_a)
    web = score_review([sample / "sheet_a.csv", sample / "sheet_b.csv"], tmp_path / "web.json")
    csv = score_review([by_csv / "sheet_a.csv", by_csv / "sheet_b.csv"], tmp_path / "csv.json")
    assert web["kappa"]["verdict"] is not None
    assert web["kappa"] == csv["kappa"] and web["raw_agreement"] == csv["raw_agreement"]
