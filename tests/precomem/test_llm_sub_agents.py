"""PreCoMem sub-agents backed by an LLM, against the local fake server (OpenAI and Gemini wire formats), and the
prompts they load."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from dimobench.evaluate.systems.precomem_backend import llm_agents
from precomem import PreCoMem, PreCoMemConfig
from precomem.llm_agents import AgentSetupError, GuardedAgents, extraction_model, targets_model
from tests.helpers.fakeserver import FakeLLMServer
from tests.helpers.llmkeys import assert_no_key_anywhere

pytestmark = pytest.mark.usefixtures("fast_retry_waits")

PROVIDERS = ["openai", "gemini"]
BASE = dict(encoder="hashing", nli="rule")


def base_url(srv: FakeLLMServer, provider: str) -> str:
    return srv.url + ("/v1" if provider == "openai" else "")


def engine(srv: FakeLLMServer, provider: str, cache: Path | None, **config: Any) -> PreCoMem:
    agents = llm_agents(f"{provider}/test", base_url=base_url(srv, provider), cache_dir=cache)
    return PreCoMem(PreCoMemConfig(agents=f"{provider}/test", **{**BASE, **config}), agents)


def role_of(schema: dict[str, Any]) -> str:
    props = schema["properties"]
    if "propositions" in props:
        return "extract"
    return "support" if "strength" in props["targets"]["items"]["properties"] else "correct"


def replies(table: dict[str, Callable[[str, dict[str, Any]], Any]]) -> Callable[[str, str, dict[str, Any]], Any]:
    """A fake-server reply hook: one function per sub-agent role (missing roles: no targets, or filled)."""

    def hook(model: str, prompt: str, schema: dict[str, Any]) -> Any:
        role = role_of(schema)
        if role in table:
            return table[role](prompt, schema)
        return {"reason": "none apply", "targets": []} if role != "extract" else None

    return hook


def keep(*props: tuple[str, str]) -> Callable[[str, dict[str, Any]], Any]:
    """Extract replies by observation: ``keep(("running", "I go running at dawn"), ...)`` -> that proposition
    (class ``statement``) when the observation contains the key."""

    def fn(prompt: str, schema: dict[str, Any]) -> Any:
        observation = prompt.split('The user just said:', 1)[1].split("\n\n")[1]
        return {"propositions": [{"text": text, "kind": "statement", "confidence": 0.5}
                                 for key, text in props if key in observation]}

    return fn


@pytest.mark.parametrize("provider", PROVIDERS)
def test_extracted_proposition_becomes_the_stored_belief(provider: str, tmp_path: Path) -> None:
    def extract(prompt: str, schema: dict[str, Any]) -> Any:
        if "bicycle" in prompt:
            return {"propositions": [{"text": "Cycles to work every day", "kind": "statement", "confidence": 0.9}]}
        if "Lisbon" in prompt:
            return {"propositions": [{"text": "Moved to Lisbon last month", "kind": "event", "confidence": 0.5},
                                     {"text": "Sister Ana runs marathons", "kind": "other", "confidence": 0.3}]}
        return {"propositions": []}

    with FakeLLMServer(reply=replies({"extract": extract})) as srv:
        mem = engine(srv, provider, tmp_path / "cache")
        upd = mem.observe("Honestly I ride my bicycle to the office every single day, rain or shine.", turn=1)
        assert upd.propositions == ["Cycles to work every day"]
        mem.observe("We moved to Lisbon last month, and my sister Ana keeps running marathons there.", turn=2)
        assert mem.observe("Thanks, that's all!", turn=3).created == []  # nothing worth keeping
        bodies = [r["body"] for r in srv.requests]
    beliefs = {b["text"]: b for b in mem.snapshot()}
    assert list(beliefs) == ["Cycles to work every day", "Moved to Lisbon last month", "Sister Ana runs marathons"]
    moved = beliefs["Moved to Lisbon last month"]
    assert moved["protected"] and moved["class"] == "event"
    assert beliefs["Sister Ana runs marathons"]["about"] == "other"
    assert beliefs["Cycles to work every day"]["provenance"]["agents"] == f"{provider}/test+rule"
    stats = mem.stats()
    assert stats["encoders"]["agents"] == f"{provider}/test+rule" and stats["agents_fallbacks"] == 0
    first = bodies[0]
    if provider == "openai":
        assert first["temperature"] == 0 and first["seed"] == 0
        assert first["messages"][0]["role"] == "system"
        assert "rain or shine" in first["messages"][1]["content"]
        assert first["response_format"]["json_schema"]["name"] == "Extraction"
    else:
        assert first["generationConfig"]["temperature"] == 0 and first["generationConfig"]["seed"] == 0
        assert "rain or shine" in first["contents"][0]["parts"][0]["text"]
    assert_no_key_anywhere(tmp_path)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_correct_target_is_soft_decayed_by_the_chosen_severity(provider: str, tmp_path: Path) -> None:
    seen: list[str] = []

    def correct(prompt: str, schema: dict[str, Any]) -> Any:
        seen.append(prompt)
        assert schema["properties"]["targets"]["items"]["properties"]["index"]["maximum"] == 0
        return {"reason": "stopped", "targets": [{"index": 0, "severity": 0.4}]}

    hook = replies({"extract": keep(("before work", "Goes running at dawn"), ("knee", "Stopped running at dawn")),
                    "correct": correct})
    with FakeLLMServer(reply=hook) as srv:
        # every turn is routed to CORRECT, so the second observation's CORRECT sub-agent decides
        mem = engine(srv, provider, tmp_path / "cache", random_routing=True, random_routing_probs=(0, 0, 1))
        mem.observe("I go running at dawn before work.", turn=1)
        row = mem.store.row_of["b1"]
        before = mem.store.effective_row(row, 2, mem.config.gamma)
        upd = mem.observe("My knee hurts, so no more running at dawn for me.", turn=2)
    assert upd.regime.value == "CORRECT" and upd.decayed == ["b1"]
    assert len(seen) == 1 and "0. [hypothesis, about user] Goes running at dawn" in seen[0]
    assert float(mem.store.conf[row]) == pytest.approx(before * (1 - 0.4), abs=1e-6)
    old = next(b for b in mem.snapshot() if b["id"] == "b1")
    assert {"turn": 2, "event": "decayed", "severity": 0.4} in old["provenance"]["events"]
    new = next(b for b in mem.snapshot() if b["text"] == "Stopped running at dawn")
    assert new["kind"] == "fact"


def test_out_of_range_index_is_schema_invalid_and_retried(tmp_path: Path) -> None:
    support_calls: list[int] = []

    def support(prompt: str, schema: dict[str, Any]) -> Any:
        support_calls.append(len(support_calls))
        index = 7 if len(support_calls) == 1 else 0  # one belief: index 7 does not exist
        return {"reason": "same habit", "targets": [{"index": index, "strength": 1.0}]}

    hook = replies({"extract": keep(("chess", "Plays chess every evening")), "support": support})
    with FakeLLMServer(reply=hook) as srv:
        mem = engine(srv, "openai", tmp_path / "cache")
        mem.observe("I play chess every evening.", turn=1)
        upd = mem.observe("Another chess evening for me, as always.", turn=2)
    assert len(support_calls) == 2 and "b1" in upd.reinforced
    assert mem.stats()["agents_fallbacks"] == 0
    with pytest.raises(ValidationError):
        targets_model("support", 1).model_validate({"reason": "r", "targets": [{"index": 1, "strength": 0.5}]})
    with pytest.raises(ValidationError):
        targets_model("correct", 3).model_validate({"reason": "r", "targets": [{"index": 0, "severity": 1.5}]})
    with pytest.raises(ValidationError):
        extraction_model(6).model_validate({"propositions": [{"text": "  ", "kind": "statement", "confidence": 0.5}]})


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fault", ["429", "500", "truncated"])
def test_faults_are_retried(provider: str, fault: str, tmp_path: Path) -> None:
    hook = replies({"extract": keep(("jazz", "Listens to jazz while cooking"))})
    with FakeLLMServer(faults={1: fault}, retry_after=2, reply=hook) as srv:
        mem = engine(srv, provider, tmp_path / "cache")
        mem.observe("I always put on some jazz while I cook.", turn=1)
        assert srv.count == 2  # the extractor's call, then its retry (an empty store asks for no targets)
    assert [b["text"] for b in mem.snapshot()] == ["Listens to jazz while cooking"]
    assert mem.stats()["agents_fallbacks"] == 0
    if fault == "429":  # the server's Retry-After is the wait (tests scale waits to zero)
        assert isinstance(mem.agents, GuardedAgents)
        assert mem.agents.primary.backend.resolve().inner.waits == [2.0]  # type: ignore[attr-defined]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("stage", ["extract", "targets"])
def test_after_the_last_retry_the_observation_falls_back_to_rules(provider: str, stage: str,
                                                                   tmp_path: Path) -> None:
    hook = replies({"extract": keep(("afternoon", "Drinks green tea"), ("matcha", "Drinks matcha now"))})
    # requests: turn 1 = extract (1); turn 2 = extract (2), support (3); five 500s exhaust one call's attempts
    first = 1 if stage == "extract" else 3
    faults = {n: "500" for n in range(first, first + 5)}
    with FakeLLMServer(faults=faults, reply=hook) as srv:
        mem = engine(srv, provider, tmp_path / "cache")
        if stage == "targets":
            mem.observe("I drink green tea every afternoon.", turn=1)
        upd = mem.observe("Green tea again this afternoon, as always.", turn=2)
        count = srv.count
        later = mem.observe("These days I drink matcha instead of green tea.", turn=3)
        assert srv.count > count, "the next observation asks the LLM again"
    agents = mem.agents
    assert isinstance(agents, GuardedAgents) and agents.fallbacks == 1 and agents.failures == 1
    assert "server error 500" in agents.last_error and "after 5 attempt(s)" in agents.last_error
    stats = mem.stats()
    assert stats["agents_fallbacks"] == 1 and stats["encoders"]["agents"] == f"{provider}/test+rule"
    texts = [b["text"] for b in mem.snapshot()]
    if stage == "extract":  # the rules store a short observation whole
        assert upd.propositions == ["Green tea again this afternoon, as always."]
    else:  # the LLM's proposition stays; the rules chose the targets (the paraphrase is reinforced)
        assert upd.propositions == ["Drinks green tea"] and "b1" in upd.reinforced
    assert later.propositions == ["Drinks matcha now"] and "Drinks matcha now" in texts


@pytest.mark.parametrize("provider", PROVIDERS)
def test_warm_cache_rerun_makes_no_call_and_gives_the_same_state(provider: str, tmp_path: Path) -> None:
    turns = ["I bake sourdough bread every Sunday morning.", "Tried a rye loaf this weekend, it came out dense.",
             "My neighbour Tom brews his own beer.", "Can you suggest a good flour for baguettes?",
             "Baked sourdough again on Sunday, best crust yet.", "I've stopped baking, no time since the new job."]

    def run(srv: FakeLLMServer) -> PreCoMem:
        mem = engine(srv, provider, tmp_path / "cache")
        for i, text in enumerate(turns, start=1):
            mem.observe(text, turn=i)
        return mem

    with FakeLLMServer() as srv:  # replies filled from the schemas: indices and strengths vary by prompt
        cold = run(srv)
        calls = srv.count
    with FakeLLMServer() as srv:
        warm = run(srv)
        assert srv.count == 0, "a warm cache must make zero calls"
    assert calls >= len(turns)
    assert warm.state() == cold.state() and warm.snapshot() == cold.snapshot()
    # the state reloads and continues identically (the clone's next calls are the cache's)
    with FakeLLMServer() as srv:
        clone = PreCoMem.from_snapshot(cold.state(), agents=llm_agents(f"{provider}/test", base_url=base_url(
            srv, provider), cache_dir=tmp_path / "cache"))
        cold.observe("Sourdough on Sunday once more.", turn=7)
        assert srv.count == 0
        clone.observe("Sourdough on Sunday once more.", turn=7)
        assert srv.count == 0
    assert clone.snapshot() == cold.snapshot()
    assert (tmp_path / "cache" / "llm-replies.jsonl").is_file()
    assert_no_key_anywhere(tmp_path)


def test_config_agents_resolve_lazily_and_a_missing_key_is_not_a_fallback(server: FakeLLMServer,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    code = ("import sys; from precomem import PreCoMem, PreCoMemConfig; "
            "m = PreCoMem(PreCoMemConfig(agents='openai/test', encoder='hashing', nli='rule')); "
            "assert 'openai' not in sys.modules and 'google.genai' not in sys.modules; "
            "print(m.stats()['encoders']['agents'])")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "openai/test+rule", r.stderr
    # from the config alone the openai SDK's own OPENAI_BASE_URL picks the server
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    mem = PreCoMem(PreCoMemConfig(agents="openai/test", **BASE))  # type: ignore[arg-type]
    mem.observe("I grow tomatoes on my balcony.", turn=1)
    assert server.count == 1 and mem.stats()["agents_fallbacks"] == 0
    monkeypatch.delenv("OPENAI_API_KEY")
    mem = PreCoMem(PreCoMemConfig(agents="openai/test", **BASE))  # type: ignore[arg-type]
    with pytest.raises(AgentSetupError, match="OPENAI_API_KEY"):
        mem.observe("I grow tomatoes on my balcony.", turn=1)
    for bad in ("anthropic/claude", "offline", ""):
        with pytest.raises(ValidationError):
            PreCoMemConfig(agents=bad)


@pytest.mark.parametrize("role", ["system", "extract", "support", "correct"])
def test_precomem_prompts_declare_what_they_use(role: str) -> None:
    from dimobench import prompts
    from precomem.llm_agents import PROMPTS

    p = prompts.load(PROMPTS[role])
    assert p.version == ("2" if role == "extract" else "1")  # extract v2: one-off events, not habits
    assert p.response_model and prompts.undeclared(PROMPTS[role]) == set()
    names = {"extract": extraction_model(6).__name__, "support": targets_model("support", 2).__name__,
             "correct": targets_model("correct", 2).__name__}
    assert p.response_model == names.get(role, "none")
