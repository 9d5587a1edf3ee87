"""A provider address where nothing listens, and a run's time budget: give up in seconds, in one line.

The waits here are the real ones (``DIMOBENCH_RETRY_WAIT_SCALE`` is removed again after the folder's autouse
fixture set it to 0), so these tests also show the waits are bounded, not just skipped.
"""

from __future__ import annotations

import shutil
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dimobench.backends.base import BaseLLM, Message, Request
from dimobench.backends.gemini import GeminiBackend
from dimobench.backends.limits import OutOfTime, Unreachable, run_limits
from dimobench.backends.openai import OpenAIBackend
from dimobench.errors import BackendError
from dimobench.generate.rewrite_jobs import session_model
from tests.helpers.cli import run_cli
from tests.helpers.fakeserver import FakeLLMServer
from tests.helpers.netguard import outside_host_guard

PROVIDERS = ["openai", "gemini"]


@pytest.fixture
def real_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIMOBENCH_RETRY_WAIT_SCALE", raising=False)


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def closed_url(provider: str = "openai") -> str:
    return f"http://127.0.0.1:{closed_port()}" + ("/v1" if provider == "openai" else "")


def make(provider: str, url: str, **kw: object) -> BaseLLM:
    if provider == "openai":
        return OpenAIBackend("gpt-test", base_url=url, **kw)  # type: ignore[arg-type]
    return GeminiBackend("gemini-test", base_url=url, **kw)  # type: ignore[arg-type]


def req() -> Request:
    return Request(messages=[Message(role="user", content="write")], response_model=session_model(2), seed=3,
                   item="p01/session-0001")


def timed(fn: Callable[[], object]) -> tuple[BaseException, float]:
    t0 = time.monotonic()
    with pytest.raises(BackendError) as err:
        fn()
    return err.value, time.monotonic() - t0


@pytest.mark.usefixtures("real_waits")
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_closed_port_gets_one_quick_retry_then_every_call_fails_at_once(provider: str) -> None:
    url = closed_url(provider)
    llm = make(provider, url)
    first, took = timed(lambda: llm.complete(req()))
    assert isinstance(first, Unreachable) and took < 5
    assert llm.waits == [1.0]  # one short retry, none of the exponential backoff
    msg = str(first)
    assert f"no server at {url} (connection refused); check --base-url or start the server, then rerun" in msg
    assert "\n" not in msg
    again, took = timed(lambda: llm.complete(req()))
    assert isinstance(again, Unreachable) and str(again) == msg and took < 0.5
    assert llm.waits == [1.0]  # the breaker answered: no new attempt, no new wait


@pytest.mark.usefixtures("real_waits")
def test_concurrent_calls_share_the_breaker() -> None:
    llm = make("openai", closed_url())

    def call(_: int) -> str:
        try:
            llm.complete(req())
        except Unreachable as exc:
            return str(exc)
        return "answered"

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=16) as pool:
        got = list(pool.map(call, range(64)))
    assert time.monotonic() - t0 < 6
    assert len(set(got)) == 1 and "no server at" in got[0]


@pytest.mark.usefixtures("real_waits")
def test_an_unknown_host_name_is_unreachable_too() -> None:
    llm = make("openai", "http://llm.example.invalid/v1")
    with outside_host_guard():  # the lookup fails as on a machine whose resolver does not know the name
        err, took = timed(lambda: llm.complete(req()))
    assert isinstance(err, Unreachable) and took < 5
    assert "no server at http://llm.example.invalid/v1 (host name not found)" in str(err)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_request_that_times_out_is_still_retried(provider: str) -> None:
    with FakeLLMServer(delay=1.0) as srv:
        llm = make(provider, srv.url + ("/v1" if provider == "openai" else ""), timeout=0.3, max_attempts=3)
        err, _ = timed(lambda: llm.complete(req()))
        assert not isinstance(err, Unreachable) and "after 3 attempt(s)" in str(err)
        assert srv.count == 3


@pytest.mark.usefixtures("real_waits")
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_run_budget_cuts_a_hanging_request_and_stops_later_calls(provider: str) -> None:
    with FakeLLMServer(delay=6.0) as srv:
        llm = make(provider, srv.url + ("/v1" if provider == "openai" else ""))
        with run_limits(1.0, "rerun with --resume"):
            err, took = timed(lambda: llm.complete(req()))
            assert isinstance(err, OutOfTime) and took < 3
            assert "used up --timeout 1 s" in str(err) and str(err).endswith("rerun with --resume")
            later, took = timed(lambda: llm.complete(req()))
            assert isinstance(later, OutOfTime) and took < 0.5
        assert srv.count == 1


def one_line_exit_2(r: object, took: float) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)  # type: ignore[attr-defined]
    lines = r.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr  # type: ignore[attr-defined]
    assert took < 30
    return str(lines[0])


@pytest.mark.usefixtures("real_waits")
def test_generate_against_a_closed_port_fails_fast_and_resume_then_finishes(tmp_path: Path) -> None:
    url, out = closed_url(), tmp_path / "s"
    args = ("generate", "--turns", "60", "--personas", "1", "--generator", "openai/gpt-4o-mini", "--no-audit",
            "--no-verify", "--out", str(out))
    t0 = time.monotonic()
    line = one_line_exit_2(run_cli(*args, "--base-url", url), time.monotonic() - t0)
    assert line == (f"dimobench: error: openai/gpt-4o-mini: no server at {url} (connection refused); check "
                    "--base-url or start the server, then rerun with --resume")
    assert not (out / "manifest.json").exists()
    with FakeLLMServer() as srv:  # the advice works: start the server, rerun with --resume
        r = run_cli(*args, "--base-url", srv.url + "/v1", "--resume")
    assert r.returncode == 0, r.stderr
    assert '"status": "complete"' in (out / "manifest.json").read_text()


@pytest.mark.usefixtures("real_waits")
def test_verify_against_a_closed_port_fails_fast(offline_suite: Callable[[int], Path], tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(offline_suite(60), suite)
    url = closed_url()
    t0 = time.monotonic()
    r = run_cli("verify", str(suite), "--verifier", "openai/gpt-4o-mini", "--base-url", url)
    line = one_line_exit_2(r, time.monotonic() - t0)
    assert f"no server at {url} (connection refused)" in line and line.endswith("then rerun with --resume")


@pytest.mark.usefixtures("real_waits")
def test_evaluate_against_a_closed_port_fails_fast(offline_suite: Callable[[int], Path], tmp_path: Path) -> None:
    url = closed_url()
    t0 = time.monotonic()
    r = run_cli("evaluate", str(offline_suite(60)), "--out", str(tmp_path / "r"), "--system", "recency",
                "--embedding", "hashing", "--no-plots", "--answerer", "openai/gpt-4o-mini", "--base-url", url)
    line = one_line_exit_2(r, time.monotonic() - t0)
    assert f"no server at {url} (connection refused)" in line


@pytest.mark.usefixtures("real_waits")
def test_generate_timeout_bounds_a_run_against_a_hanging_server(tmp_path: Path) -> None:
    with FakeLLMServer(delay=8.0) as srv:
        t0 = time.monotonic()
        r = run_cli("generate", "--turns", "60", "--personas", "1", "--generator", "openai/gpt-4o-mini",
                    "--base-url", srv.url + "/v1", "--timeout", "3", "--no-audit", "--out", str(tmp_path / "s"))
        took = time.monotonic() - t0
    line = one_line_exit_2(r, took)
    assert took < 15
    assert "used up --timeout 3 s" in line and line.endswith("rerun with --resume")
