"""Replies as real servers send them (``data/real_replies/``): fenced, prose-wrapped, cut at ``max_tokens``,
the wrong shape. Each is served verbatim over HTTP to the openai backend, which must parse it, retry it with
feedback, or report it as truncated, as issue 19 says. The ``transformers_serve_*`` bodies were recorded from
``transformers serve`` with SmolLM2-135M-Instruct; the others are written in the shapes Ollama and llama.cpp
return."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from dimobench.backends.base import Message, Request
from dimobench.backends.openai import OpenAIBackend
from dimobench.backends.replies import NoJSON, extract_json
from dimobench.backends.usage import Ledger
from dimobench.errors import BackendError
from tests.helpers.fakeserver import FakeLLMServer

DATA = Path(__file__).parent / "data" / "real_replies"
BIO = "Ana is a nurse in Lisbon who cycles to the hospital at dawn."


class Bio(BaseModel):
    bio: str


def recorded(name: str) -> dict[str, Any]:
    return dict(json.loads((DATA / f"{name}.json").read_text(encoding="utf-8")))


def ask(srv: FakeLLMServer, max_tokens: int = 100) -> Any:
    backend = OpenAIBackend(model="m", base_url=srv.url + "/v1")
    return backend.complete(Request(messages=[Message(role="user", content="Write Ana's bio.")], response_model=Bio,
                                    temperature=0, seed=1, max_tokens=max_tokens))


@pytest.mark.parametrize("name", ["clean", "ollama_fenced", "llamacpp_prose"])
def test_json_inside_fences_or_prose_is_taken_at_once(name: str) -> None:
    with FakeLLMServer(bodies=[recorded(name)]) as srv:
        resp = ask(srv)
    assert resp.parsed.bio == BIO and resp.attempts == 1 and srv.count == 1
    assert json.loads(resp.text) == {"bio": BIO}  # what the cache keeps: the JSON alone, fence and prose dropped


def test_a_clean_reply_keeps_its_exact_text() -> None:
    """Strict servers' replies are stored byte for byte as before (the cache entries do not change)."""
    body = recorded("clean")
    with FakeLLMServer(bodies=[body]) as srv:
        assert ask(srv).text == body["choices"][0]["message"]["content"]


@pytest.mark.parametrize("name", ["transformers_serve_length", "fenced_length"])
def test_a_reply_cut_at_max_tokens_is_retried_once_with_twice_the_room(name: str) -> None:
    with FakeLLMServer(bodies=[recorded(name), recorded("ollama_fenced")]) as srv:
        resp = ask(srv, max_tokens=24)
    assert resp.parsed.bio == BIO and resp.attempts == 2
    first, second = (r["body"] for r in srv.requests)
    assert (first["max_tokens"], second["max_tokens"]) == (24, 48)
    assert second["messages"] == first["messages"]  # more room, same prompt: nothing was wrong but the length


def test_a_reply_cut_twice_is_reported_as_truncated_without_more_tries() -> None:
    with FakeLLMServer(bodies=[recorded("transformers_serve_length"), recorded("fenced_length")]) as srv:
        with pytest.raises(BackendError) as err:
            ask(srv, max_tokens=24)
    assert srv.count == 2
    assert "cut off at max_tokens 48 (finish_reason length" in str(err.value)
    assert "after 2 attempt(s)" in str(err.value)


@pytest.mark.parametrize(("name", "error"), [
    ("transformers_serve_wrong_shape", "reply does not match Bio: bio: Input should be a valid string"),
    ("transformers_serve_string", "reply does not match Bio: reply: Input should be a valid dictionary"),
])
def test_a_retry_shows_the_model_its_reply_and_what_was_wrong(name: str, error: str) -> None:
    bad = recorded(name)
    with FakeLLMServer(bodies=[bad, recorded("clean")]) as srv:
        resp = ask(srv)
    assert resp.parsed.bio == BIO and resp.attempts == 2
    first, second = (r["body"]["messages"] for r in srv.requests)
    assert second[: len(first)] == first
    assert second[len(first)] == {"role": "assistant", "content": bad["choices"][0]["message"]["content"]}
    assert second[-1]["role"] == "user" and error in second[-1]["content"]


def test_feedback_goes_back_to_the_original_prompt_each_time() -> None:
    """Each retry quotes only the last bad reply: the prompt does not grow with every attempt."""
    wrong = recorded("transformers_serve_wrong_shape")
    with FakeLLMServer(bodies=[wrong, wrong, wrong, recorded("clean")]) as srv:
        assert ask(srv).attempts == 4
    sizes = [len(r["body"]["messages"]) for r in srv.requests]
    assert sizes == [1, 3, 3, 3]


def test_replies_that_never_parse_end_as_one_line_naming_the_last_problem() -> None:
    wrong = recorded("transformers_serve_string")
    with FakeLLMServer(bodies=[wrong] * 5) as srv, pytest.raises(BackendError) as err:
        ask(srv)
    assert srv.count == 5 and "after 5 attempt(s)" in str(err.value) and "\n" not in str(err.value)


def test_every_billed_attempt_is_counted_whether_the_call_ends_well_or_not() -> None:
    """A provider bills each reply, usable or not: the run's token totals (and so its cost) count them all."""
    wrong, clean = recorded("transformers_serve_wrong_shape"), recorded("clean")
    tokens = [(b["usage"]["prompt_tokens"], b["usage"]["completion_tokens"]) for b in (wrong, clean)]
    backend_ledger = Ledger(spec="openai/m")
    with FakeLLMServer(bodies=[wrong, clean]) as srv:
        backend = OpenAIBackend(model="m", base_url=srv.url + "/v1")
        resp = backend_ledger.call(backend, Request(messages=[Message(role="user", content="Write Ana's bio.")],
                                                    response_model=Bio, temperature=0, seed=1))
    assert resp.attempts == 2
    both = (tokens[0][0] + tokens[1][0], tokens[0][1] + tokens[1][1])
    assert (resp.usage.input_tokens, resp.usage.output_tokens) == both
    summary = backend_ledger.summary()
    assert (summary["input_tokens"], summary["output_tokens"], summary["attempts"]) == (*both, 2)
    failing = Ledger(spec="openai/m")
    with FakeLLMServer(bodies=[wrong] * 2) as srv, pytest.raises(BackendError):
        failing.call(OpenAIBackend(model="m", base_url=srv.url + "/v1", max_attempts=2),
                     Request(messages=[Message(role="user", content="Write Ana's bio.")], response_model=Bio,
                             temperature=0, seed=1))
    summary = failing.summary()
    assert summary["failures"] == 1 and summary["attempts"] == 2
    assert (summary["input_tokens"], summary["output_tokens"]) == (2 * tokens[0][0], 2 * tokens[0][1])


@pytest.mark.parametrize(("text", "value"), [
    ('{"a": 1}', {"a": 1}),
    ('  {"a": 1}\n', {"a": 1}),
    ('```json\n{"a": 1}\n```', {"a": 1}),
    ('```\n{"a": 1}\n```', {"a": 1}),
    ('Here you go:\n```JSON\n{"a": [1, 2]}\n```\nAnything else?', {"a": [1, 2]}),
    ('The answer is {"a": "x {y}"} as asked.', {"a": "x {y}"}),
    ('Answer: [1, 2] done', [1, 2]),
    ('"just a string"', "just a string"),
])
def test_extract_json_finds_the_value(text: str, value: Any) -> None:
    assert extract_json(text)[0] == value


@pytest.mark.parametrize("text", [
    "",
    "Sure, Ana is a nurse.",
    '```json\n{"turns": [{"user": "hi", "assistant": "hello"}, {"user": "a',  # cut: no fragment passed off
    '{"turns": [{"user": "hi", "assistant": "hello"}',
])
def test_extract_json_refuses_what_holds_no_whole_value(text: str) -> None:
    with pytest.raises(NoJSON) as err:
        extract_json(text)
    assert err.value.message.startswith("reply is not valid JSON (")
