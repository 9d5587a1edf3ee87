"""report.html on the XL suite: size and the time to open it in headless Chromium; prints JSON figures.

Generates the XL suite (5 x 1,050 turns, 3 drifts, seed 7), evaluates five systems on it (default: none, full,
recency, bm25, oracle; ``--embedding hashing`` by default to keep the run short: the page's size depends on the
recalled texts, not on the embedding), then opens ``report.html`` from disk in Debian's ``chromium`` (Playwright)
``--opens`` times in fresh pages. Targets (issue 21): under 15 MB, open under 3 s.

- ``report_html_mb``: the file's size; ``answers_mb``: the answers-*.jsonl it summarises, for scale;
- ``open_s``: seconds from navigation until the page says it is ready (``body[data-ready='1']``), each run.

Run: ``.venv/bin/python benchmarks/report_html.py [--system precomem ...] [--embedding minilm]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

# This folder holds benchmarks/precomem.py; run as a script, it would shadow the precomem package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--system", action="append", default=None)
    ap.add_argument("--embedding", default="hashing")
    ap.add_argument("--opens", type=int, default=3)
    args = ap.parse_args()
    systems = args.system or ["none", "full", "recency", "bm25", "oracle"]
    from playwright.sync_api import sync_playwright

    from dimobench.api import evaluate, generate_suite
    from dimobench.evaluate.api import EvalConfig
    from dimobench.generate.config import make_config

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise SystemExit("needs Debian's chromium (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        suite, out = Path(tmp) / "xl", Path(tmp) / "eval"
        generate_suite(make_config(turns=1050, drifts=3, seed=7), suite)
        t0 = time.perf_counter()
        evaluate(EvalConfig(suites=[suite], systems=systems, embedding=args.embedding, plots=False, bootstrap=0),
                 out)
        eval_s = time.perf_counter() - t0
        page_file = out / "report.html"
        opens = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            for _ in range(args.opens):
                page = browser.new_page()
                start = time.perf_counter()
                page.goto(page_file.resolve().as_uri(), wait_until="load")
                page.wait_for_selector("body[data-ready='1']", timeout=60_000)
                opens.append(round(time.perf_counter() - start, 3))
                curves = page.locator("path.curve").count()
                page.close()
            browser.close()
        answers = sum(f.stat().st_size for f in out.glob("answers-*.jsonl"))
        print(json.dumps({"systems": systems, "embedding": args.embedding, "questions": 2100,
                          "report_html_mb": round(page_file.stat().st_size / 2**20, 2),
                          "answers_mb": round(answers / 2**20, 1), "open_s": opens, "curves": curves,
                          "evaluate_s": round(eval_s, 1), "targets": {"report_html_mb": 15, "open_s": 3}}))


if __name__ == "__main__":
    main()
