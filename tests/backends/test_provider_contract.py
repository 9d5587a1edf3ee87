"""Every real backend against the local fake server: structured output, faults retried, keys kept secret."""

from __future__ import annotations

import os

import pytest

from dimobench.backends import resolve_backend
from dimobench.backends.base import BaseLLM, Message, Request
from dimobench.backends.gemini import GeminiBackend
from dimobench.backends.openai import OpenAIBackend
from dimobench.errors import BackendError
from dimobench.generate.rewrite_jobs import session_model
from tests.helpers.fakeserver import FakeLLMServer
from tests.helpers.llmkeys import GEMINI_KEY, OPENAI_KEY

PROVIDERS = ["openai", "gemini"]


def make(provider: str, srv: FakeLLMServer, **kw: object) -> BaseLLM:
    if provider == "openai":
        return OpenAIBackend("gpt-test", base_url=srv.url + "/v1", **kw)  # type: ignore[arg-type]
    return GeminiBackend("gemini-test", base_url=srv.url, **kw)  # type: ignore[arg-type]


def req(n: int = 2) -> Request:
    return Request(messages=[Message(role="system", content="be brief"), Message(role="user", content="write")],
                   response_model=session_model(n), seed=3, item="p01/session-0001")


@pytest.mark.parametrize("provider", PROVIDERS)
class TestBackendContract:
    def test_requests_a_strict_json_schema_and_validates_the_reply(self, provider: str,
                                                                    server: FakeLLMServer) -> None:
        resp = make(provider, server).complete(req(3))
        assert len(resp.parsed.turns) == 3 and resp.usage.input_tokens > 0 and resp.attempts == 1
        body = server.requests[0]["body"]
        if provider == "openai":
            assert server.requests[0]["path"] == "/v1/chat/completions"
            fmt = body["response_format"]
            assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
            assert fmt["json_schema"]["schema"]["properties"]["turns"]["minItems"] == 3
            assert body["seed"] == 3 and body["messages"][0] == {"role": "system", "content": "be brief"}
            assert server.requests[0]["headers"]["authorization"] == f"Bearer {OPENAI_KEY}"
        else:
            assert server.requests[0]["path"] == "/v1beta/models/gemini-test:generateContent"
            cfg = body["generationConfig"]
            assert cfg["responseMimeType"] == "application/json" and cfg["seed"] == 3
            assert cfg["responseJsonSchema"]["properties"]["turns"]["maxItems"] == 3
            assert body["systemInstruction"]["parts"][0]["text"] == "be brief"
            assert server.requests[0]["headers"]["x-goog-api-key"] == GEMINI_KEY

    @pytest.mark.parametrize("fault", ["429", "500", "truncated", "missing", "garbage"])
    def test_each_fault_is_retried(self, provider: str, fault: str) -> None:
        with FakeLLMServer(faults={1: fault, 2: fault}, retry_after=7) as srv:
            llm = make(provider, srv)
            resp = llm.complete(req())
            assert resp.attempts == 3 and srv.count == 3 and len(resp.parsed.turns) == 2
            if fault == "429":
                assert llm.waits[:2] == [7.0, 7.0]  # Retry-After honoured

    def test_sdk_retries_are_off_and_the_last_failure_is_one_redacted_line(self, provider: str) -> None:
        with FakeLLMServer(faults=dict.fromkeys(range(1, 10), "500")) as srv:
            llm = make(provider, srv, max_attempts=2)
            with pytest.raises(BackendError) as err:
                llm.complete(req())
            assert srv.count == 2  # our two attempts, no hidden SDK retries
        msg = str(err.value)
        assert "server error 500" in msg and "after 2 attempt" in msg and "\n" not in msg
        assert OPENAI_KEY not in msg and GEMINI_KEY not in msg

    def test_a_missing_key_is_one_clear_line(self, provider: str, server: FakeLLMServer,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
        for var in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
            monkeypatch.delenv(var, raising=False)
        with pytest.raises(BackendError, match="API_KEY.* is not set"):
            make(provider, server)

    def test_resolved_with_default_model_and_cache(self, provider: str, server: FakeLLMServer) -> None:
        llm = resolve_backend(provider, base_url=server.url + ("/v1" if provider == "openai" else ""))
        assert llm.spec == {"openai": "openai/gpt-4o", "gemini": "gemini/gemini-2.5-pro"}[provider]
        first = llm.complete(req())  # type: ignore[attr-defined]
        again = llm.complete(req())  # type: ignore[attr-defined]
        assert server.count == 1 and again.cached and again.text == first.text


def test_unknown_provider_is_one_line() -> None:
    from dimobench.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown provider 'anthropic'"):
        resolve_backend("anthropic/claude")


@pytest.mark.runapi
@pytest.mark.parametrize("spec,var", [("openai/gpt-4o-mini", "OPENAI_API_KEY"),
                                      ("gemini/gemini-2.5-flash", "GEMINI_API_KEY")])
def test_live_api_structured_reply(spec: str, var: str) -> None:
    if not (os.environ.get(var) or (var == "GEMINI_API_KEY" and os.environ.get("GOOGLE_API_KEY"))):
        pytest.skip(f"{var} is not set")
    resp = resolve_backend(spec, use_cache=False).complete(req(2))  # type: ignore[attr-defined]
    assert len(resp.parsed.turns) == 2 and all(t.user.strip() for t in resp.parsed.turns)
