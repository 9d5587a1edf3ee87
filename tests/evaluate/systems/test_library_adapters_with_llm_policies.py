"""The full-mode adapters (``mem0``, ``amem``) with their libraries' LLM policies driven by the local fake server.

The fake LLM "extracts" recognisable facts (mem0), keywords, context and tags (A-Mem) and one neighbour
evolution (A-Mem), so the tests can check that the libraries' calls reach the server, that recall returns what
the LLM wrote, that personas stay apart, that nothing looks up an outside host, that a rerun is served from the
reply cache and that the key is written nowhere. Skipped where the extras are not installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dimobench.evaluate.protocol import SystemFailure, normalise_items
from dimobench.evaluate.systems import make_system
from dimobench.evaluate.systems.adapters import LLM_ADAPTERS
from tests.helpers.fakeserver import FakeLLMServer
from tests.helpers.netguard import outside_host_guard, turn

KEY = "sk-test-NEVER-WRITE-memory-4c1d9e"
MODEL = "fake-memory-model"
ALICE = ["I love hiking in the mountains on weekends.", "My dog is called Rex and he is a beagle.",
         "Hmm, okay.", "I work night shifts as a nurse."]
BOB = ["I play the cello in a string quartet.", "My favourite food is spicy ramen."]
SILENT = "Hmm, okay."
"""A turn the fake mem0 extraction finds nothing memorable in."""
EVOLVER = "I work night shifts as a nurse."
"""The turn on which the fake A-Mem rewrites its neighbours' context and tags."""


def fact(text: str) -> str:
    """The fact the fake mem0 extractor writes for a user turn."""
    return f"User says that {text[0].lower()}{text[1:].rstrip('.')}."


def context(text: str) -> str:
    """The context the fake A-Mem analysis writes for a note."""
    return "ctx-" + hashlib.sha256(text.encode()).hexdigest()[:6]


def fake_llm(model: str, prompt: str, schema: dict[str, Any] | None) -> Any:
    """The fake server's replies to mem0's and A-Mem's own prompts (dispatch on the schema they ask for)."""
    props = (schema or {}).get("properties", {})
    if "memory" in props:  # mem0's additive extraction
        new = re.search(r"## New Messages\nuser: (.*)\n", prompt)
        text = new.group(1).strip() if new else ""
        if not text or text == SILENT:
            return {"memory": []}
        return {"memory": [{"id": "0", "text": fact(text), "attributed_to": "user", "linked_memory_ids": []}]}
    if "keywords" in props:  # A-Mem's note analysis
        text = prompt.rsplit("Content for analysis:", 1)[1].strip()
        words = [w.strip(".,").lower() for w in text.split() if len(w) > 4]
        return {"keywords": words[:3] or ["none"], "context": context(text), "tags": ["personal"]}
    if "should_evolve" in props:  # A-Mem's evolution
        n = int(re.search(r"The number of neighbors is (\d+)", prompt).group(1))  # type: ignore[union-attr]
        if f"content: {EVOLVER}" not in prompt:
            return {"should_evolve": False, "actions": [], "suggested_connections": [], "tags_to_update": [],
                    "new_context_neighborhood": [], "new_tags_neighborhood": []}
        return {"should_evolve": True, "actions": ["update_neighbor"], "suggested_connections": [],
                "tags_to_update": [], "new_context_neighborhood": ["evolved by the nurse note"] * n,
                "new_tags_neighborhood": [["evolved"]] * n}
    return None


def _needs(name: str) -> None:
    for module in LLM_ADAPTERS[name][2]:
        pytest.importorskip(module)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A fake key, zero retry waits, the adapters' temporary directories under ``tmp_path``."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("DIMOBENCH_RETRY_WAIT_SCALE", "0")
    for var in ("OPENAI_BASE_URL", "OPENROUTER_API_KEY", "DIMOBENCH_BASE_URL", "DIMOBENCH_MEMORY_LLM"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply=fake_llm) as srv:
        yield srv


def build(name: str, srv: FakeLLMServer, cache: Path) -> Any:
    _needs(name)
    return make_system(name, memory_llm={"spec": f"openai/{MODEL}", "base_url": f"{srv.url}/v1", "cache_dir": cache})


def replay(system: Any, persona: str, texts: list[str]) -> None:
    system.reset(persona)
    for n, text in enumerate(texts, 1):
        system.observe(turn(n, text, f"2024-04-{20 + n}T08:51:06"))


def key_files(root: Path) -> list[str]:
    """Files under ``root`` (and mem0's home) whose bytes hold the key."""
    roots = [root, *([Path(os.environ["MEM0_DIR"])] if os.environ.get("MEM0_DIR") else [])]
    return [str(p) for r in roots for p in r.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


@pytest.mark.parametrize("name", sorted(LLM_ADAPTERS))
def test_llm_policy_runs_through_the_fake_server(name: str, server: FakeLLMServer, tmp_path: Path) -> None:
    with outside_host_guard() as seen:
        system = build(name, server, tmp_path / "cache")
        replay(system, "alice", ALICE)
        items = normalise_items(system.recall("What is the name of my pet?", 3), 3)
        stats = system.stats()
    assert seen == [], f"{name} looked up outside hosts: {seen}"
    bodies = [r["body"] for r in server.requests]
    assert all(r["path"] == "/v1/chat/completions" for r in server.requests)
    assert all(r["headers"]["authorization"] == f"Bearer {KEY}" for r in server.requests)
    assert {b["model"] for b in bodies} == {MODEL} and all(b["temperature"] == 0 for b in bodies)
    if name == "mem0":  # one extraction per turn; recall is the extracted facts, each with its turn
        assert server.count == len(ALICE) == stats["llm_calls"]
        assert items[0].text == fact(ALICE[1]) and items[0].source_turns == [2]
        assert {it.text for it in items} <= {fact(t) for t in ALICE if t != SILENT}
        assert stats["raw_items"] == len(ALICE) - 1 and stats["turns_observed"] == len(ALICE)
    else:  # an analysis per note, an evolution per note after the first; recall shows what the LLM wrote
        assert server.count == 2 * len(ALICE) - 1 == stats["llm_calls"]
        dog = next(it for it in items if it.source_turns == [2])
        assert dog.text.startswith(ALICE[1]) and "keywords: called, beagle" in dog.text
        assert "context: evolved by the nurse note" in dog.text and "tags: evolved" in dog.text  # evolution ran
        assert context(ALICE[1]) not in dog.text and stats["evolutions"] == 1
    assert stats["llm_failures"] == 0 and f"openai/{MODEL}" in stats["retrieval"]
    assert key_files(tmp_path) == [] and list((tmp_path / "cache").iterdir())


@pytest.mark.parametrize("name", sorted(LLM_ADAPTERS))
def test_personas_stay_apart(name: str, server: FakeLLMServer, tmp_path: Path) -> None:
    with outside_host_guard() as seen:
        system = build(name, server, tmp_path / "cache")
        replay(system, "alice", ALICE)
        alice_calls = server.count
        system.reset("bob")
        assert system.recall("What is the name of my pet?", 10) == []
        replay(system, "bob", BOB)
        texts = [it.text for it in normalise_items(system.recall("What is the name of my pet?", 10), 10)]
        system.reset("alice")
        assert system.recall("ramen", 10) == []
    assert seen == [] and len(texts) == len(BOB)
    assert all(any(b[:-1] in t or fact(b) == t for b in BOB) for t in texts)
    for req in server.requests[alice_calls:]:  # Bob's prompts show none of Alice's turns
        prompt = json.dumps(req["body"]["messages"])
        assert not any(a[:-1] in prompt for a in ALICE if a != SILENT)


@pytest.mark.parametrize("name", sorted(LLM_ADAPTERS))
def test_rerun_comes_from_the_reply_cache(name: str, server: FakeLLMServer, tmp_path: Path) -> None:
    first = build(name, server, tmp_path / "cache")
    replay(first, "alice", ALICE)
    calls = server.count
    want = [(it.text, it.source_turns) for it in normalise_items(first.recall("my pet", 3), 3)]
    second = build(name, server, tmp_path / "cache")
    replay(second, "alice", ALICE)
    got = [(it.text, it.source_turns) for it in normalise_items(second.recall("my pet", 3), 3)]
    assert server.count == calls and got == want
    assert second.stats()["llm_calls"] == 0 and second.stats()["llm_cache_hits"] == calls


@pytest.mark.parametrize("name", sorted(LLM_ADAPTERS))
def test_unreachable_llm_fails_the_system(name: str, tmp_path: Path) -> None:
    from dimobench.evaluate.systems.adapters import closed_port

    _needs(name)
    system = make_system(name, memory_llm={"spec": f"openai/{MODEL}", "base_url": f"http://127.0.0.1:{closed_port()}/v1",
                                           "cache_dir": tmp_path / "cache"})
    system.reset("alice")
    with pytest.raises(Exception, match="no server at .*connection refused"):
        system.observe(turn(1, ALICE[0]))


@pytest.mark.parametrize("name", sorted(LLM_ADAPTERS))
def test_without_an_llm_one_line(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _needs(name)
    with pytest.raises(SystemFailure, match=f"system '{name}' .* needs an LLM: pass --memory-llm"):
        make_system(name)
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(SystemFailure, match=f"^system '{name}': OPENAI_API_KEY is not set"):
        make_system(name, memory_llm={"spec": "openai/x"})


def test_cli_without_memory_llm_exits_2(small_suite: Path, tmp_path: Path) -> None:
    _needs("mem0")
    from dimobench.cli.app import app

    res = CliRunner().invoke(app, ["evaluate", str(small_suite), "--system", "full", "--system", "mem0", "--out",
                                   str(tmp_path / "r"), "--embedding", "hashing", "--no-plots"])
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert lines[-1].startswith("dimobench: error: system 'mem0' runs its library's LLM memory policy and needs an "
                                "LLM: pass --memory-llm openai/<model>")
    assert "Traceback" not in res.output and not (tmp_path / "r" / "report.json").exists()


def test_cli_bad_memory_llm_exits_2(small_suite: Path, tmp_path: Path) -> None:
    from dimobench.cli.app import app

    res = CliRunner().invoke(app, ["evaluate", str(small_suite), "--system", "full", "--memory-llm", "nope/x",
                                   "--out", str(tmp_path / "r"), "--embedding", "hashing", "--no-plots"])
    assert res.exit_code == 2 and "--memory-llm 'nope/x': unknown provider" in res.output


@pytest.mark.slow
def test_cli_scores_the_full_systems(server: FakeLLMServer, tmp_path: Path) -> None:
    for name in LLM_ADAPTERS:
        _needs(name)
    from dimobench.api import generate_suite
    from dimobench.cli.app import app
    from dimobench.generate.config import make_config

    suite = tmp_path / "s"
    generate_suite(make_config(turns=60, personas=1, qa=6, seed=3), suite)
    out = tmp_path / "r"
    args = ["evaluate", str(suite), "--out", str(out), "--bootstrap", "20", "--no-plots", "--system", "mem0",
            "--system", "amem", "--memory-llm", f"openai/{MODEL}", "--base-url", f"{server.url}/v1",
            "--cache-dir", str(tmp_path / "cache")]
    with outside_host_guard() as seen:
        res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert seen == [] and server.count > 0
    report = json.loads((out / "report.json").read_text())
    assert report["config"]["memory_llm"] == {"provider": "openai", "model": MODEL, "temperature": 0.0, "seed": 0}
    assert server.url not in json.dumps(report["config"])
    for name in LLM_ADAPTERS:
        assert 0 <= report["systems"][name]["overall"] <= 1
        rows = [json.loads(x) for x in (out / f"answers-{name}.jsonl").read_text().splitlines()]
        recalled = [r for row in rows for r in row["recalled"]]
        assert recalled
        if name == "mem0":
            assert all(r["text"].startswith("User says that ") for r in recalled)
        else:
            assert all(" context: ctx-" in r["text"] and r["text"].endswith(" tags: personal") for r in recalled)
    assert key_files(tmp_path) == []


@pytest.mark.parametrize("name", sorted(LLM_ADAPTERS))
def test_missing_library_names_the_extra_first(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    extra, _, modules = LLM_ADAPTERS[name]
    monkeypatch.setitem(sys.modules, modules[0], None)  # find_spec() reports it missing, installed or not
    with pytest.raises(SystemFailure, match=rf"^system '{name}' needs the '{extra}' extra: pip install"):
        make_system(name, memory_llm={"spec": f"openai/{MODEL}"})
