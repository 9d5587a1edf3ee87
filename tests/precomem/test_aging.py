"""``precomem:aging``'s two switches: occasions age for the present; only clearly related turns support."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from precomem import PreCoMem
from precomem import operators as ops

MALL = "I went to the Westfield mall this morning for the Uniqlo opening."
NOW, PAST = "Where do I go shopping these days?", "Where did I go shopping before?"
QUIET = ["What is the capital of Portugal?", "Is a tomato a fruit?", "How many grams are in an ounce?",
         "Suggest a name for a goldfish."]


def _score(mem: PreCoMem, bid: str, query: str) -> float:
    return next(it.score for it in mem.recall(query, k=10) if it.id == bid)


def _confidence(mem: PreCoMem, bid: str) -> float:
    return float(next(b["confidence"] for b in mem.snapshot() if b["id"] == bid))


@pytest.mark.parametrize("half_life", [None, 20.0])
def test_an_old_occasion_ranks_lower_for_the_present_only(make_mem: Callable[..., PreCoMem],
                                                          half_life: float | None) -> None:
    mem = make_mem(event_half_life=half_life)
    bid = mem.observe(MALL, turn=1).created[0]
    assert next(b for b in mem.snapshot() if b["id"] == bid)["protected"]
    now, past, conf = _score(mem, bid, NOW), _score(mem, bid, PAST), _confidence(mem, bid)
    for i, text in enumerate(QUIET, start=38):  # 40 turns later, none of them about shopping
        assert bid not in mem.observe(text, turn=i).reinforced
    assert _confidence(mem, bid) == pytest.approx(conf)  # an event is never decayed: it stays true of its day
    assert _score(mem, bid, PAST) == pytest.approx(past, rel=1e-5)  # what happened is still there for the past
    if half_life is None:  # the default (paper) retrieval: the occasion counts for the present as on its day
        assert _score(mem, bid, NOW) == pytest.approx(now, rel=1e-5)
    else:  # 40 turns = two half-lives: a quarter of its weight as evidence of the present, score floor aside
        aged = _score(mem, bid, NOW)
        assert aged < 0.7 * now
        # a contradiction lowers it but is no fresh evidence of the occasion: it does not make it young again
        ops.soft_decay(mem.store, mem.store.row_of[bid], 0.2, 41, mem.config)
        mem._conf_cache = None
        assert _score(mem, bid, NOW) < aged
        assert bid in mem.observe(MALL.replace("Uniqlo", "Zara"), turn=42).reinforced  # told again
        assert _score(mem, bid, NOW) > 0.9 * 0.8 * now  # fresh evidence of the present


def test_statements_do_not_age(make_mem: Callable[..., PreCoMem]) -> None:
    habit = "I usually buy my clothes at the big shopping centre."  # a trait, not an occasion: not protected
    scores = []
    for half_life in (None, 20.0):
        mem = make_mem(event_half_life=half_life, gamma=0.0)  # gamma 0: no clock, so only aging could move it
        bid = mem.observe(habit, turn=1).created[0]
        assert not next(b for b in mem.snapshot() if b["id"] == bid)["protected"]
        for i, text in enumerate(QUIET, start=38):
            mem.observe(text, turn=i)
        scores.append(_score(mem, bid, NOW))
    assert scores[1] == pytest.approx(scores[0], rel=1e-5)


@pytest.mark.parametrize("encoder_kind", ["minilm"], indirect=True)
def test_partial_support_similarity_leaves_loosely_related_turns_out(make_mem: Callable[..., PreCoMem]) -> None:
    climbing = "I go rock climbing at the bouldering gym every Saturday morning"
    loose = "My forearms are sore today."  # on the topic (calibrated similarity ~0.18), no paraphrase
    graded = make_mem()
    bid = graded.observe(climbing, turn=1).created[0]
    assert bid in graded.observe(loose, turn=2).reinforced  # default: a partial step of support
    strict = make_mem(partial_support_similarity=0.3)
    sid = strict.observe(climbing, turn=1).created[0]
    assert sid not in strict.observe(loose, turn=2).reinforced
    events = next(b for b in strict.snapshot() if b["id"] == sid)["provenance"]["events"]
    assert [e["event"] for e in events] == ["created"]
    assert sid in strict.observe("Every Saturday morning I'm at the bouldering gym climbing", turn=3).reinforced


def test_the_partial_support_floor_must_sit_below_full_support() -> None:
    from pydantic import ValidationError

    from precomem import PreCoMemConfig

    with pytest.raises(ValidationError, match="must be below support_similarity"):
        PreCoMemConfig(partial_support_similarity=0.5)
