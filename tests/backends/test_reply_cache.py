"""The reply cache: hits make no call, misses are filled, failures are never stored, a torn file still loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dimobench.backends.base import Message, Request, TransientError
from dimobench.backends.cache import CACHE_FILE, CachedLLM, ReplyCache
from dimobench.backends.scripted import ScriptedBackend
from dimobench.errors import BackendError
from dimobench.generate.rewrite_jobs import ExchangeText

GOOD = {"user": "u", "assistant": "a"}


def req(content: str = "hi", **kw: object) -> Request:
    return Request(messages=[Message(role="user", content=content)], response_model=ExchangeText,
                   **{"seed": 1, **kw})


def test_a_warm_cache_makes_zero_calls_across_instances(tmp_path: Path) -> None:
    first = ScriptedBackend([GOOD, {"user": "v", "assistant": "b"}])
    CachedLLM(first, ReplyCache(tmp_path)).complete(req("one"))
    CachedLLM(first, ReplyCache(tmp_path)).complete(req("two"))
    second = ScriptedBackend([])  # would fail loudly on any call
    llm = CachedLLM(second, ReplyCache(tmp_path))
    assert llm.complete(req("one")).parsed.user == "u" and llm.complete(req("two")).parsed.user == "v"
    assert llm.complete(req("one")).cached and second.history == []


def test_key_covers_messages_schema_temperature_and_seed(tmp_path: Path) -> None:
    inner = ScriptedBackend([GOOD] * 4)
    llm = CachedLLM(inner, ReplyCache(tmp_path))
    for r in (req(), req("other"), req(temperature=0.2), req(seed=2), req(), req(item="label only")):
        llm.complete(r)
    assert len(inner.history) == 4


def test_failures_and_unseeded_sampling_are_never_cached(tmp_path: Path) -> None:
    inner = ScriptedBackend([TransientError("500")] * 2 + [GOOD, GOOD], max_attempts=2)
    llm = CachedLLM(inner, ReplyCache(tmp_path))
    with pytest.raises(BackendError):
        llm.complete(req())
    assert len(ReplyCache(tmp_path)) == 0
    llm.complete(req(seed=None, temperature=0.7))
    assert len(ReplyCache(tmp_path)) == 0
    llm.complete(req())
    assert len(ReplyCache(tmp_path)) == 1


def test_a_truncated_last_line_is_skipped_and_appends_stay_readable(tmp_path: Path) -> None:
    llm = CachedLLM(ScriptedBackend([GOOD]), ReplyCache(tmp_path))
    llm.complete(req("one"))
    path = tmp_path / CACHE_FILE
    path.write_bytes(path.read_bytes() + b'{"key": "abc", "text": "{\\"us')  # a kill mid-write
    inner = ScriptedBackend([{"user": "w", "assistant": "c"}])
    llm = CachedLLM(inner, ReplyCache(tmp_path))
    assert llm.complete(req("one")).cached
    llm.complete(req("two"))
    lines = path.read_bytes().splitlines()
    assert json.loads(lines[-1])["text"] == '{"user": "w", "assistant": "c"}'
    assert len(ReplyCache(tmp_path)) == 2


def test_default_location_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIMOBENCH_CACHE_DIR", str(tmp_path / "c"))
    assert ReplyCache().path == tmp_path / "c" / CACHE_FILE
