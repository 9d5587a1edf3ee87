"""The shared machinery: strict schemas, reply parsing, the retry loop (through the scripted double), redaction."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from dimobench.backends.base import InvalidReply, Message, Request, TransientError, parse_reply
from dimobench.backends.scripted import ScriptedBackend
from dimobench.backends.wire import redact, strict_schema
from dimobench.errors import BackendError
from dimobench.generate.rewrite_jobs import ExchangeText, questions_model, session_model


def req(model: type[BaseModel] = ExchangeText, **kw: object) -> Request:
    return Request(messages=[Message(role="user", content="hi")], response_model=model, seed=1, **kw)


def test_strict_schema_is_closed_inlined_and_fixed_length() -> None:
    schema = strict_schema(session_model(3))
    assert "$defs" not in str(schema) and "$ref" not in str(schema) and "title" not in schema
    turns = schema["properties"]["turns"]
    assert turns["minItems"] == turns["maxItems"] == 3
    item = turns["items"]
    assert item["additionalProperties"] is False and item["required"] == ["user", "assistant"]
    assert schema["additionalProperties"] is False and schema["required"] == ["turns"]


@pytest.mark.parametrize("text,ok", [
    ('{"user": "a", "assistant": "b"}', True),
    ('  {"user": "a", "assistant": "b"}\n', True),
    (None, False),
    ("", False),
    ('{"user": "a", "assist', False),
    ('{"user": "a"}', False),
    ('{"user": 3, "assistant": "b"}', False),
    ("Sure! Here is the JSON: {}", False),
])
def test_parse_reply(text: str | None, ok: bool) -> None:
    if ok:
        assert parse_reply(text, ExchangeText).user == "a"
    else:
        with pytest.raises(InvalidReply):
            parse_reply(text, ExchangeText)


def test_fixed_length_arrays_are_enforced() -> None:
    with pytest.raises(InvalidReply, match="questions"):
        parse_reply('{"questions": ["a", "b"]}', questions_model(3))


def test_invalid_replies_and_transient_errors_are_retried_then_succeed() -> None:
    good = {"user": "u", "assistant": "a"}
    llm = ScriptedBackend(["not json", '{"user": "u"}', TransientError("429", retry_after=7.0), good])
    resp = llm.complete(req())
    assert resp.parsed.user == "u" and resp.attempts == 4 and len(llm.history) == 4
    assert llm.waits[2] == 7.0  # Retry-After honoured


def test_content_check_failures_are_retried() -> None:
    def no_cats(parsed: ExchangeText) -> None:
        if "cat" in parsed.user:
            raise ValueError("names its state")

    llm = ScriptedBackend([{"user": "my cat", "assistant": "a"}, {"user": "my dog", "assistant": "a"}])
    assert llm.complete(req(check=no_cats)).parsed.user == "my dog"


def test_gives_up_after_the_last_attempt_with_one_clear_error() -> None:
    llm = ScriptedBackend(["{"] * 10, max_attempts=3)
    with pytest.raises(BackendError, match=r"scripted/test: reply is not valid JSON .*after 3 attempt"):
        llm.complete(req())
    assert len(llm.history) == 3


def test_non_transient_errors_are_not_retried() -> None:
    llm = ScriptedBackend([BackendError("401 bad key"), {"user": "u", "assistant": "a"}])
    with pytest.raises(BackendError, match="401"):
        llm.complete(req())
    assert len(llm.history) == 1


def test_scripted_backend_fails_loudly_when_the_queue_runs_out() -> None:
    llm = ScriptedBackend([{"user": "u", "assistant": "a"}])
    llm.complete(req())
    with pytest.raises(BackendError, match="ran out of replies at request 2"):
        llm.complete(req(item="p01/bio"))


def test_redact_hides_every_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-secret-value")
    assert redact("bad key AIza-secret-value and sk-test-NEVER-WRITE-7f3a9c1e5b") == "bad key *** and ***"
