"""The rule every writer of text keeps (offline catalog, LLM rewrite, LLM re-render): no reply sums up the user."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from dimobench.catalog import NAMES_THE_USER
from dimobench.generate.rewrite_jobs import _SessionCheck
from dimobench.suite.textspec import local_problems

CUE = {"kind": "cue", "forbidden": ["rock climber"]}
FILLER = {"kind": "filler", "forbidden": []}


@pytest.mark.parametrize("reply", [
    "Since you've taken up climbing, a chalk bag is worth it.",
    "Since you’ve taken up climbing, a chalk bag is worth it.",  # the curly apostrophe LLMs write
    "Sounds like you're really into tea now!",
    "You’ve become quite the runner.",
    "Your new hobby will pay off.",
    "You're clearly a big fan of jazz.",
    "Now that you've switched to tea, try a loose-leaf Assam.",
])
def test_a_reply_that_sums_up_the_user_is_a_problem_for_any_turn(reply: str) -> None:
    assert local_problems(CUE, "Chalk everywhere after the wall this evening.", reply)
    assert local_problems(FILLER, "How long do I boil an egg?", reply)


@pytest.mark.parametrize("reply", [
    "Most apps sync your position, so another device picks up where you stopped once it's online.",
    "If you enjoy the ride, yes, but check the author's publishing pace.",
    "Either way, it's one more thing you now know.",
    # generic "you" in advice (the review of session 28)
    "Nowadays you can renew it online in ten minutes.",
    "If you no longer need the subscription, cancel before the renewal date.",
    "As you become more confident, lengthen the intervals.",
    "Since you started the loaf at 8, it should be ready by noon.",
    "You are into the final week of the notice period, so send it today.",
])
def test_a_reply_that_only_answers_is_no_problem(reply: str) -> None:
    assert local_problems(CUE, "Chalk everywhere after the wall this evening.", reply) == []


def test_a_cue_that_names_its_state_or_a_change_is_a_problem_and_a_filler_saying_the_same_is_not() -> None:
    assert local_problems(CUE, "As a rock climber I need chalk.", "Try a chalk bag.")
    assert local_problems(CUE, "I go to the wall these days.", "Try a chalk bag.")
    assert local_problems({**FILLER, "forbidden": ["rock climber"]}, "As a rock climber I need chalk.",
                          "Try a chalk bag.") == []


def test_an_llm_session_whose_reply_sums_up_the_user_is_retried() -> None:
    check = _SessionCheck([CUE, FILLER])
    good = SimpleNamespace(turns=[SimpleNamespace(user="Chalk everywhere after the wall.", assistant="Brush it off."),
                                  SimpleNamespace(user="How long for an egg?", assistant="Six minutes.")])
    check(good)
    bad = SimpleNamespace(turns=[good.turns[0],
                                 SimpleNamespace(user="How long for an egg?",
                                                 assistant="Six minutes, since you've become such a cook.")])
    with pytest.raises(ValueError, match="exchange 2: .*sums up the user"):
        check(bad)
    named = SimpleNamespace(turns=[SimpleNamespace(user="Rock climber life: chalk everywhere.", assistant="Brush it."),
                                   good.turns[1]])
    with pytest.raises(ValueError, match="exchange 1: names its state"):
        check(named)


def test_no_reply_in_the_packaged_catalogs_sums_up_the_user() -> None:
    # the offline text keeps the rule by construction: every reply any catalog ships (7,202 when written)
    data = Path(__file__).resolve().parents[2] / "data"

    def replies(x: object):  # type: ignore[no-untyped-def]
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "assistant" and isinstance(v, str):
                    yield v
                elif k == "also" and isinstance(v, list):
                    yield from v
                else:
                    yield from replies(v)
        elif isinstance(x, list):
            for v in x:
                yield from replies(v)

    found = [r for f in sorted(data.rglob("*.json")) for r in replies(json.loads(f.read_text(encoding="utf-8")))]
    assert len(found) > 5000
    assert [r for r in found if NAMES_THE_USER.search(r)] == []
