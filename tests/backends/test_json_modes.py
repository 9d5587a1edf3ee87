"""``--json-mode``: the schema enforced by the server, JSON only, or the schema in the prompt, chosen per run or
found by one probe call (``auto``), and recorded where the run's accounting goes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from dimobench.backends import jsonmode, resolve_backend
from dimobench.backends.base import Message, Request
from dimobench.backends.openai import OpenAIBackend
from tests.helpers.fakeserver import FakeLLMServer


class Bio(BaseModel):
    bio: str


def ask(backend: Any) -> Any:
    return backend.complete(Request(messages=[Message(role="system", content="You write bios."),
                                              Message(role="user", content="Write Ana's bio.")],
                                    response_model=Bio, temperature=0, seed=1))


def test_json_schema_mode_sends_what_it_always_sent() -> None:
    with FakeLLMServer() as srv:
        ask(OpenAIBackend(model="m", base_url=srv.url + "/v1"))
    body = srv.requests[0]["body"]
    assert body["response_format"]["type"] == "json_schema" and body["response_format"]["json_schema"]["strict"]
    assert body["messages"] == [{"role": "system", "content": "You write bios."},
                                {"role": "user", "content": "Write Ana's bio."}]


@pytest.mark.parametrize(("mode", "fmt"), [("json_object", {"type": "json_object"}), ("prompt", None)])
def test_weaker_modes_put_the_schema_into_the_system_prompt(mode: str, fmt: Any) -> None:
    with FakeLLMServer() as srv:
        resp = ask(OpenAIBackend(model="m", base_url=srv.url + "/v1", json_mode=mode))
    assert resp.parsed.bio and resp.attempts == 1
    body = srv.requests[0]["body"]
    assert body.get("response_format") == fmt
    system = body["messages"][0]["content"]
    assert system.startswith("You write bios.") and "JSON Schema" in system and '"bio"' in system
    assert body["messages"][1] == {"role": "user", "content": "Write Ana's bio."}


@pytest.mark.parametrize(("ignore", "expected"), [(False, "json_schema"), (True, "prompt")])
def test_auto_probes_once_and_keeps_the_answer(ignore: bool, expected: str) -> None:
    with FakeLLMServer(ignore_schema=ignore) as srv:
        backend = OpenAIBackend(model="m", base_url=srv.url + "/v1", json_mode="auto")
        assert ask(backend).parsed.bio and ask(backend).parsed.bio
    assert backend.json_mode == expected and backend.probe_seconds is not None
    probes = [r for r in srv.requests if r["body"]["messages"][-1]["content"] == "Say hello."]
    assert len(probes) == (1 if expected == "json_schema" else 2)  # json_schema, then json_object, then prompt
    assert srv.count == len(probes) + 2


@pytest.mark.parametrize("ignore", [False, True])
def test_the_probes_tokens_are_billed_to_the_call_that_made_it_probe(ignore: bool) -> None:
    """A probe is a billed request like any other: its tokens join the first call's usage, and only that call's."""
    with FakeLLMServer(ignore_schema=ignore) as srv:
        backend = OpenAIBackend(model="m", base_url=srv.url + "/v1", json_mode="auto")
        first, second = ask(backend), ask(backend)
    with FakeLLMServer(ignore_schema=ignore) as srv:
        plain = ask(OpenAIBackend(model="m", base_url=srv.url + "/v1", json_mode=backend.json_mode))
    assert (second.usage.input_tokens, second.usage.output_tokens) == (plain.usage.input_tokens,
                                                                       plain.usage.output_tokens)
    assert first.usage.input_tokens > second.usage.input_tokens and first.usage.output_tokens > 0


def test_a_server_that_refuses_response_format_gets_prompt_mode() -> None:
    """Some servers answer 400 to an unknown ``response_format``: the probe moves on instead of failing."""
    with FakeLLMServer(faults={1: "400", 2: "400"}) as srv:
        backend = OpenAIBackend(model="m", base_url=srv.url + "/v1", json_mode="auto")
        assert backend.mode() == "prompt" and srv.count == 2


def test_the_mode_block_reaches_every_resolved_backend() -> None:
    with jsonmode.json_mode("prompt"):
        llm = resolve_backend("openai/m", base_url="http://127.0.0.1:9/v1")
    assert llm.json_mode == "prompt"  # type: ignore[attr-defined]
    assert resolve_backend("openai/m", base_url="http://127.0.0.1:9/v1").json_mode == "json_schema"  # type: ignore[attr-defined]


def test_cache_keys_do_not_depend_on_the_mode(tmp_path: Path) -> None:
    """A reply cached under one mode answers the same request under another: warm reruns stay free."""
    from dimobench.backends.cache import CachedLLM, ReplyCache

    with FakeLLMServer() as srv:
        ask(CachedLLM(OpenAIBackend(model="m", base_url=srv.url + "/v1"), ReplyCache(tmp_path)))
        resp = ask(CachedLLM(OpenAIBackend(model="m", base_url=srv.url + "/v1", json_mode="prompt"),
                             ReplyCache(tmp_path)))
    assert resp.cached and srv.count == 1


def test_generate_with_auto_on_a_server_without_structured_output(tmp_path: Path) -> None:
    """The CLI end to end: the probe finds ``prompt`` mode, fenced replies are parsed, the manifest says so."""
    with FakeLLMServer(ignore_schema=True) as srv:
        cmd = [sys.executable, "-m", "dimobench", "generate", "--generator", "openai/m", "--base-url",
               srv.url + "/v1", "--out", str(tmp_path / "s"), "--cache-dir", str(tmp_path / "c"), "--personas", "1",
               "--turns", "60", "--no-verify", "--no-audit", "--json-mode", "auto", "--concurrency", "1"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env={**os.environ, "COLUMNS": "200"})
        assert r.returncode == 0, r.stderr
        manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
        assert manifest["status"] == "complete" and manifest["config"]["json_mode"] == "prompt"
        calls = srv.count
        r = subprocess.run([*cmd, "--force"], capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stderr
        assert srv.count - calls == 2  # warm rerun: only the probe (json_schema, json_object), no task call
    assert json.loads((tmp_path / "s" / "manifest.json").read_text()) == manifest


def test_an_unknown_mode_is_one_line_and_exit_2(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "dimobench", "generate", "--out", str(tmp_path / "s"),
                        "--json-mode", "yaml"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--json-mode 'yaml': choose one of" in r.stderr and "Traceback" not in r.stderr
