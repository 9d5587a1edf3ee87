"""Calls done, failed and left, and the time to go from the measured latency (issue 19)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pydantic import BaseModel

from dimobench.backends import progress
from dimobench.backends.base import Message, Request
from dimobench.backends.jobs import Job, RunLog, run_jobs
from dimobench.backends.openai import OpenAIBackend
from dimobench.backends.usage import Ledger
from tests.helpers.fakeserver import FakeLLMServer


class Bio(BaseModel):
    bio: str


def test_the_line_counts_and_estimates_from_measured_latency() -> None:
    p = progress.CallProgress()
    p.plan(10)
    for seconds in (20.0, 40.0):
        p.record(ok=True, cached=False, seconds=seconds)
    p.record(ok=False, cached=False, seconds=30.0)
    p.record(ok=True, cached=True, seconds=0.0)  # a cache hit is done but says nothing about latency
    assert p.line() == "LLM calls: 3 done, 1 failed, 6 left, ~3 min to go (30.0 s a call)"
    assert p.line(concurrency=3) == "LLM calls: 3 done, 1 failed, 6 left, ~60 s to go (30.0 s a call)"


def test_every_metered_call_of_a_call_loop_reports(tmp_path: Path) -> None:
    lines: list[str] = []
    jobs = [Job(f"p01/{i}", "bio", Request(messages=[Message(role="user", content=f"bio {i}")], response_model=Bio,
                                           temperature=0), []) for i in range(3)]
    with FakeLLMServer(faults={2: "500", 3: "500", 4: "500", 5: "500", 6: "500"}) as srv, \
            progress.tracking(lines.append) as tracker:
        failures: list[dict[str, str]] = []
        run_jobs(jobs, OpenAIBackend(model="m", base_url=srv.url + "/v1"), Ledger("openai/m"), RunLog(tmp_path),
                 failures, concurrency=1)
    assert (tracker.planned, tracker.done, tracker.failed, tracker.left()) == (3, 2, 1, 0)
    assert lines[0] == "LLM calls: 0 done, 0 failed, 3 left" and lines[-1].startswith("LLM calls: 2 done, 1 failed (")


def test_dry_run_says_how_long_and_on_what_assumption(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "dimobench", "generate", "--generator", "openai/local", "--base-url",
           "http://127.0.0.1:9/v1", "--out", str(tmp_path / "s"), "--personas", "1", "--turns", "60", "--no-verify",
           "--dry-run", "--concurrency", "2"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "OPENAI_API_KEY": "x"})
    assert r.returncode == 0, r.stderr
    assert "time: ~3 min for 12 call(s) at 30 s a call and --concurrency 2 (assumed for a local server" in r.stdout
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "OPENAI_API_KEY": "x", "DIMOBENCH_SECONDS_PER_CALL": "80"})
    assert "time: ~8 min for 12 call(s) at 80 s a call and --concurrency 2 (DIMOBENCH_SECONDS_PER_CALL)" in r.stdout
