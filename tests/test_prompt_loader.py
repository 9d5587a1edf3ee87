"""The prompt loader: strict variables reported all at once, hashes, and every shipped prompt well-formed."""

from __future__ import annotations

import pytest

from dimobench import prompts
from dimobench.generate import rewrite_jobs as llm_jobs


def test_missing_variables_are_reported_all_at_once() -> None:
    with pytest.raises(prompts.MissingVariables) as err:
        prompts.render("generator/bio", name="Ann")
    assert err.value.missing == ["age", "occupation", "city", "people"]
    assert "age, occupation, city, people" in str(err.value)


def test_render_returns_text_and_the_file_hash() -> None:
    out = prompts.render("generator/bio", name="Ann Lee", age=30, occupation="nurse", city="Oslo",
                         people=[{"name": "Bo", "relation": "neighbour"}])
    assert "Ann Lee" in out.text and "Bo (neighbour)" in out.text and "---" not in out.text
    assert out.hash == prompts.load("generator/bio").hash and len(out.hash) == 64
    assert out.response_model == "PersonaBio" and out.version == "1"


@pytest.mark.parametrize("name", llm_jobs.PROMPTS)
def test_every_prompt_declares_what_it_uses(name: str) -> None:
    p = prompts.load(name)
    assert p.version and p.response_model
    assert prompts.undeclared(name) == set()


def test_fake_server_vocabulary_has_no_state_words() -> None:
    """The fake server's replies must pass the same content checks a real model's must."""
    from dimobench.catalog import load_catalog
    from tests.helpers.fakeserver import WORDS

    cat = load_catalog()
    state_words = {w for tp in cat.topics for tr in tp.traits for s in tr.states
                   for w in llm_jobs.content_words(s.description)}
    assert not state_words & set(WORDS)
