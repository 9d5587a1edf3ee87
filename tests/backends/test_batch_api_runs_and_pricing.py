"""``--batch``: generation and verification through the OpenAI Batch API of the local fake server (real
processes, real HTTP on 127.0.0.1), and ``--dry-run`` counting stage-6 calls and pricing batches."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from dimobench.backends.usage import BATCH_PRICE_FACTOR, Ledger, cost_usd
from tests.helpers.fakeserver import FakeLLMServer
from tests.helpers.llmkeys import OPENAI_KEY

KEY = "sk-test-SECRET"
SMALL = ["--personas", "1", "--turns", "120", "--drifts", "1"]
FAST = ["--batch", "--batch-poll", "0.01"]


@pytest.fixture(autouse=True)
def secret_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def dimobench(*args: str) -> list[str]:
    return [sys.executable, "-m", "dimobench", *args]


def gen(srv: FakeLLMServer, out: Path, cache: Path, *extra: str, verify: bool = False) -> list[str]:
    return dimobench("generate", "--generator", "openai/test", "--base-url", srv.url + "/v1", "--out", str(out),
                     "--cache-dir", str(cache), *SMALL, *([] if verify else ["--no-verify"]), *extra)


def env() -> dict[str, str]:
    return {**os.environ, "COLUMNS": "200", "OPENAI_API_KEY": KEY, "DIMOBENCH_RETRY_WAIT_SCALE": "0"}


def run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env())


def suite_bytes(out: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(out.iterdir()) if f.is_file()}


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(f.read_text()) for f in sorted((out / ".dimobench" / "batches").glob("*.json"))]


def no_key_anywhere(root: Path, *texts: str) -> None:
    for f in root.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert KEY.encode() not in data and OPENAI_KEY.encode() not in data, f
    for t in texts:
        assert KEY not in t


def canonical(bodies: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(b, sort_keys=True) for b in bodies)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A synchronous run: its suite bytes and every chat-completions body it sent."""
    tmp = tmp_path_factory.mktemp("sync")
    with FakeLLMServer() as srv:
        r = run(gen(srv, tmp / "s", tmp / "cache"))
        assert r.returncode == 0, r.stderr
        bodies = [q["body"] for q in srv.requests if q["path"].endswith("/chat/completions")]
    return {"bytes": suite_bytes(tmp / "s"), "bodies": bodies}


def test_batch_run_sends_the_sync_bodies_and_ends_with_the_same_bytes(reference: dict[str, Any],
                                                                      tmp_path: Path) -> None:
    with FakeLLMServer() as srv:
        r = run(gen(srv, tmp_path / "b", tmp_path / "cache", *FAST))
        assert r.returncode == 0, r.stderr
        assert srv.count == 0, "every call went through the batches"
        assert srv.batches_created == 2  # the bios first (sessions need them), then sessions and questions
        assert canonical(srv.batch_input_bodies()) == canonical(reference["bodies"])
        lines = [ln for b in srv.batches.values() for ln in b["_lines"]]
        assert all(ln["method"] == "POST" and ln["url"] == "/v1/chat/completions" for ln in lines)
        assert all(ln["body"]["response_format"]["type"] == "json_schema" for ln in lines)
        assert {f["purpose"] for f in srv.files.values()} == {"batch", "batch_output"}
        assert all(b["endpoint"] == "/v1/chat/completions" and b["completion_window"] == "24h"
                   for b in srv.batches.values())
        assert all(q["headers"]["authorization"] == f"Bearer {KEY}" for q in srv.batch_log)
        assert "went through the OpenAI Batch API" in r.stderr
    assert suite_bytes(tmp_path / "b") == reference["bytes"]
    v = run(dimobench("validate", str(tmp_path / "b")))
    assert v.returncode == 0, v.stderr
    recs = records(tmp_path / "b")
    assert len(recs) == 2 and all(rec["collected"] and rec["batch_id"].startswith("batch_") for rec in recs)
    assert sum(len(rec["requests"]) for rec in recs) == len(reference["bodies"])
    log = [json.loads(ln) for ln in (tmp_path / "b" / ".dimobench" / "run.log.jsonl").read_text().splitlines()]
    assert log[-1]["batch_calls"] == log[-1]["calls"] == len(reference["bodies"])

    with FakeLLMServer() as srv:  # the batch replies are in the cache: no call, no batch, same bytes
        r_sync = run(gen(srv, tmp_path / "again", tmp_path / "cache"))
        r_batch = run(gen(srv, tmp_path / "again-b", tmp_path / "cache", *FAST))
        assert r_sync.returncode == 0 and r_batch.returncode == 0, r_sync.stderr + r_batch.stderr
        assert srv.count == 0 and srv.batches_created == 0 and not srv.batch_log
    assert suite_bytes(tmp_path / "again") == suite_bytes(tmp_path / "again-b") == reference["bytes"]
    no_key_anywhere(tmp_path, r.stdout, r.stderr, r_sync.stderr, r_batch.stderr)


def test_faulty_batch_lines_are_made_synchronously(reference: dict[str, Any], tmp_path: Path) -> None:
    faults = {"p01/session-0002": "error", "p01/session-0003": "truncated", "p01/qa-q0001": "missing"}
    with FakeLLMServer(batch_faults=faults) as srv:
        r = run(gen(srv, tmp_path / "s", tmp_path / "cache", *FAST))
        assert r.returncode == 0, r.stderr
        assert srv.count == 3 and srv.batches_created == 2
        retried = {json.dumps(q["body"]["messages"]) for q in srv.requests}
        by_item = {ln["custom_id"]: json.dumps(ln["body"]["messages"]) for b in srv.batches.values()
                   for ln in b["_lines"]}
        assert retried == {by_item[item] for item in faults}
    assert suite_bytes(tmp_path / "s") == reference["bytes"]
    log = [json.loads(ln) for ln in (tmp_path / "s" / ".dimobench" / "run.log.jsonl").read_text().splitlines()]
    bad = {e["item"]: e["error"] for e in log if e.get("event") == "call" and e.get("ok") is False}
    assert set(bad) == set(faults) and "500" in bad["p01/session-0002"] and "not valid JSON" in bad[
        "p01/session-0003"]
    assert log[-1]["batch_calls"] == log[-1]["calls"] - 3
    # a line that came back but could not be used was billed: its tokens are in the totals (an error line is not)
    calls = [e for e in log if e.get("event") == "call"]
    assert {e["item"] for e in calls if e.get("ok") is False and e.get("input_tokens", 0) > 0} == {
        "p01/session-0003", "p01/qa-q0001"}
    assert log[-1]["input_tokens"] == sum(e.get("input_tokens", 0) for e in calls)
    assert log[-1]["output_tokens"] == sum(e.get("output_tokens", 0) for e in calls)


def test_a_line_that_keeps_failing_is_recorded_and_resume_completes(reference: dict[str, Any],
                                                                     tmp_path: Path) -> None:
    with FakeLLMServer(batch_faults={"p01/session-0004": "error"}, faults=dict.fromkeys(range(1, 6), "500")) as srv:
        cmd = gen(srv, tmp_path / "s", tmp_path / "cache", *FAST)
        r = run(cmd)
        assert r.returncode == 1, r.stderr
        assert "Traceback" not in r.stderr and "p01/session-0004" in r.stderr
        assert json.loads((tmp_path / "s" / "manifest.json").read_text())["status"] == "partial"
        fails = (tmp_path / "s" / ".dimobench" / "failures.jsonl").read_text().splitlines()
        assert [json.loads(f)["item"] for f in fails] == ["p01/session-0004"]
        r = run([*cmd, "--resume"])
        assert r.returncode == 0, r.stderr
        assert srv.batches_created == 3  # the one miss left goes as a batch of its own
    assert suite_bytes(tmp_path / "s") == reference["bytes"]


def test_no_wait_exits_after_submitting_and_resume_collects_the_same_batch(reference: dict[str, Any],
                                                                           tmp_path: Path) -> None:
    with FakeLLMServer(batch_polls=10**6) as srv:
        cmd = gen(srv, tmp_path / "s", tmp_path / "cache", *FAST)
        r = run([*cmd, "--no-wait"])
        assert r.returncode == 0, r.stderr
        assert "batch_1" in r.stderr and "--resume" in r.stderr and "Traceback" not in r.stderr
        assert srv.batches_created == 1 and not (tmp_path / "s" / "manifest.json").exists()
        (rec,) = records(tmp_path / "s")
        assert rec["batch_id"] == "batch_1" and not rec["collected"] and list(rec["requests"]) == ["p01/bio"]
        r = run([*cmd, "--no-wait", "--resume"])  # still running: polled, not resubmitted
        assert r.returncode == 0 and srv.batches_created == 1 and "in_progress" in r.stderr, r.stderr
        srv.batch_polls = 0
        r = run([*cmd, "--resume"])
        assert r.returncode == 0, r.stderr
        assert srv.batches_created == 2 and srv.count == 0
        created = [q for q in srv.batch_log if q["method"] == "POST" and q["path"].endswith("/batches")]
        assert len(created) == 2
    assert suite_bytes(tmp_path / "s") == reference["bytes"]
    no_key_anywhere(tmp_path, r.stderr)


def test_kill_9_while_waiting_then_resume_polls_the_recorded_batch(reference: dict[str, Any],
                                                                   tmp_path: Path) -> None:
    with FakeLLMServer(batch_polls=10**6) as srv:
        cmd = gen(srv, tmp_path / "s", tmp_path / "cache", *FAST)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env())
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None and not any(
                q["method"] == "GET" and q["path"].endswith("/batches/batch_1") for q in list(srv.batch_log)):
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert srv.batches_created == 1 and records(tmp_path / "s")[0]["batch_id"] == "batch_1"
        srv.batch_polls = 0
        r = run([*cmd, "--resume"])
        assert r.returncode == 0, r.stderr
        assert srv.batches_created == 2 and srv.count == 0  # batch_1 collected, then the sessions' batch
    assert suite_bytes(tmp_path / "s") == reference["bytes"]


def test_an_expired_batch_gives_what_it_finished_and_the_rest_is_made_synchronously(
        reference: dict[str, Any], tmp_path: Path) -> None:
    with FakeLLMServer(batch_final="expired") as srv:
        r = run(gen(srv, tmp_path / "s", tmp_path / "cache", *FAST))
        assert r.returncode == 0, r.stderr
        second = list(srv.batches.values())[1]["_lines"]
        assert srv.count == len(second) - len(second) // 2 + 1  # the bio batch expired with nothing done too
    assert suite_bytes(tmp_path / "s") == reference["bytes"]


def test_a_rejected_batch_is_one_line_exit_2_and_a_rerun_submits_anew(tmp_path: Path) -> None:
    with FakeLLMServer(batch_final="failed") as srv:
        cmd = gen(srv, tmp_path / "s", tmp_path / "cache", *FAST)
        r = run(cmd)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "batch_1 failed" in r.stderr and "token_limit_exceeded" in r.stderr
        srv.batch_final = "completed"
        r = run([*cmd, "--resume"])
        assert r.returncode == 0, r.stderr
        assert srv.batches_created == 3 and srv.count == 0


@pytest.mark.parametrize("generator", ["gemini/gemini-test", "offline"])
def test_batch_needs_the_openai_provider(generator: str, tmp_path: Path) -> None:
    r = run(dimobench("generate", "--generator", generator, "--out", str(tmp_path / "s"), *SMALL, "--batch"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--batch" in r.stderr, r.stderr
    assert not (tmp_path / "s").exists()
    r = run(dimobench("generate", "--out", str(tmp_path / "s"), *SMALL, "--no-wait"))
    assert r.returncode == 2 and "--no-wait only applies with --batch" in r.stderr


def test_verify_batch_matches_a_synchronous_verification(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    r = run(dimobench("generate", "--out", str(suite), *SMALL, "--no-verify"))
    assert r.returncode == 0, r.stderr
    shutil.copytree(suite, tmp_path / "copy")
    with FakeLLMServer() as srv:
        base = ["--verifier", "openai/test", "--base-url", srv.url + "/v1"]
        r = run(dimobench("verify", str(suite), *base, "--cache-dir", str(tmp_path / "c1"), *FAST))
        assert r.returncode == 0, r.stderr
        assert srv.count == 0 and srv.batches_created == 1 and len(srv.batch_input_bodies()) == 48
        r = run(dimobench("verify", str(tmp_path / "copy"), *base, "--cache-dir", str(tmp_path / "c2")))
        assert r.returncode == 0, r.stderr
        assert srv.count == 48
        bad = run(dimobench("verify", str(suite), "--verifier", "gemini/x", "--batch"))
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert suite_bytes(suite) == suite_bytes(tmp_path / "copy")


def test_dry_run_counts_verifier_calls_as_they_are_made_and_prices_batches(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with FakeLLMServer() as srv:
        dry = run([*gen(srv, tmp_path / "s", cache, "--dry-run", verify=True), "--verifier", "openai/test"])
        assert dry.returncode == 0 and srv.count == 0 and not (tmp_path / "s").exists(), dry.stderr
        lines = dry.stdout.strip().splitlines()
        gen_line = next(ln for ln in lines if ln.startswith("dry run: "))
        verify_line = next(ln for ln in lines if "QA item(s) + " in ln)
        assert any(ln.startswith("time: ~") and "call(s) at" in ln for ln in lines)  # the time a run would take
        calls = int(gen_line.split("dry run: ")[1].split()[0])
        checks = int(verify_line.split("48 QA item(s) + ")[1].split()[0])
        assert verify_line.startswith(f"verification: {48 + checks} LLM call(s) to make (0 of {48 + checks}")
        r = run([*gen(srv, tmp_path / "s", cache, verify=True), "--verifier", "openai/test"])
        assert r.returncode == 0, r.stderr
        assert srv.count == calls + 48 + checks  # the fake server's turn checks all pass: no re-renders
        again = run([*gen(srv, tmp_path / "s2", cache, "--dry-run", verify=True), "--verifier", "openai/test"])
        assert again.stdout.startswith("dry run: 0 LLM call(s)") and "verification: 0 LLM call(s)" in again.stdout

    dialogues = [json.loads(ln) for ln in (tmp_path / "s" / "dialogues.jsonl").read_text().splitlines()]
    assert checks == sum(1 for t in dialogues if (t.get("annotation") or {}).get("kind") in (
        "cue", "chatter", "entity", "decoy") and t["annotation"].get("trait_id"))

    priced = dimobench("generate", "--generator", "openai/gpt-4o", "--verifier", "openai/gpt-4o", "--out",
                       str(tmp_path / "x"), *SMALL, "--dry-run")
    sync, batch = run(priced), run([*priced, "--batch"])
    assert "at batch prices" in batch.stdout and "at batch prices" not in sync.stdout
    assert len(batch.stdout.strip().splitlines()) == 2 and batch.stdout.count("$") == 2


def test_estimates_and_ledger_price_batch_calls_at_the_batch_factor(tmp_path: Path) -> None:
    from dimobench.api import RunOptions, estimate_generation
    from dimobench.generate.config import make_config

    assert BATCH_PRICE_FACTOR["openai"] == 0.5
    assert cost_usd("openai/gpt-4o", 10**6, 10**6, batch=True) == pytest.approx(0.5 * cost_usd(
        "openai/gpt-4o", 10**6, 10**6))
    cfg = make_config(personas=1, turns=120, drifts=1, generator="openai/gpt-4o", verifier="openai/gpt-4o")
    options = RunOptions(cache_dir=tmp_path)
    sync = estimate_generation(cfg, options, verify=True)
    batch = estimate_generation(cfg, options, verify=True, batch=True)
    assert batch["cost_usd_estimate"] == pytest.approx(0.5 * sync["cost_usd_estimate"], rel=1e-4)
    assert batch["verify"]["cost_usd_estimate"] == pytest.approx(  # type: ignore[index]
        0.5 * sync["verify"]["cost_usd_estimate"], rel=1e-4)  # type: ignore[index]
    assert sync["verify"]["items"] == 48 and not sync["verify"]["exact"]  # type: ignore[index]
    assert "verify" not in estimate_generation(cfg, options)

    ledger = Ledger("openai/gpt-4o")
    ledger.record(cached=False, attempts=1, input_tokens=10**6, output_tokens=0)
    ledger.record(cached=False, attempts=1, input_tokens=10**6, output_tokens=0, batch=True)
    summary = ledger.summary()
    assert summary["batch_calls"] == 1 and summary["calls"] == 2
    assert summary["cost_usd_estimate"] == pytest.approx(2.5 + 1.25)
    assert "batch_calls" not in Ledger("openai/gpt-4o").summary()
