"""Empty-store writes, MAINTAIN reinforcement and promotion, hypothesis decay, pruning and protection."""

from __future__ import annotations

from collections.abc import Callable

from precomem import PreCoMem
from tests.helpers.precomem_texts import PARAPHRASES, PARTY, UNRELATED


def _belief(mem: PreCoMem, bid: str) -> dict | None:
    return next((b for b in mem.snapshot() if b["id"] == bid), None)


def test_empty_store_first_observation_is_profile_hypothesis(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem()
    u = mem.observe(PARTY, turn=1, timestamp="2024-03-02T10:00:00")
    assert u.regime == "PROFILE"
    assert 0.0 <= u.surprisal <= 1.0 and 0.0 <= u.reliability <= 1.0
    (b,) = mem.snapshot()
    assert b["kind"] == "hypothesis" and b["text"] == PARTY and b["provenance"]["source_turns"] == [1]


def test_new_topic_in_populated_store_becomes_hypothesis(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem()
    mem.observe(PARTY, turn=1)
    for i, p in enumerate(PARAPHRASES[:3], start=2):
        mem.observe(p, turn=i)
    u = mem.observe("I adopted a rescue greyhound named Biscuit", turn=5)
    assert len(u.created) == 1
    new = _belief(mem, u.created[0])
    assert new is not None and new["kind"] == "hypothesis"


def test_repeated_support_promotes_after_five_paraphrases(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem()
    bid = mem.observe(PARTY, turn=1).created[0]
    confs = [_belief(mem, bid)["confidence"]]  # type: ignore[index]
    for i, p in enumerate(PARAPHRASES, start=2):
        u = mem.observe(p, turn=i)
        assert u.regime == "MAINTAIN", (p, u)
        assert bid in u.reinforced and not u.created
        w = _belief(mem, bid)["confidence"]  # type: ignore[index]
        eta = mem.config.eta
        assert abs(w - (confs[-1] + eta * (1 - confs[-1]))) < 1e-6  # w <- w + eta(1 - w)
        assert 0.0 <= w <= 1.0
        confs.append(w)
    assert _belief(mem, bid)["kind"] == "fact"  # type: ignore[index]
    assert len(mem.snapshot()) == 1  # paraphrases reinforce, they do not pile up


def test_never_reinforced_hypothesis_pruned_after_eight_unsupported_turns(
    make_mem: Callable[..., PreCoMem],
) -> None:
    mem = make_mem()  # the default is the paper's plain clock: every turn is an unsupported turn
    assert mem.config.background_rate == 1.0
    bid = mem.observe(PARTY, turn=1).created[0]
    for i, text in enumerate(UNRELATED[:7], start=2):
        mem.observe(text, turn=i)
    assert _belief(mem, bid) is not None  # 7 unsupported turns: still there, decayed
    assert _belief(mem, bid)["confidence"] < 0.48 - 6 * 0.05  # type: ignore[index]
    u = mem.observe(UNRELATED[7], turn=9)
    assert bid in u.pruned and _belief(mem, bid) is None


def test_topic_scoped_clock_unrelated_turns_cost_a_fraction(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem(background_rate=0.1)  # the precomem:topic_clock variant
    bid = mem.observe(PARTY, turn=1).created[0]
    w0 = _belief(mem, bid)["confidence"]  # type: ignore[index]
    for i, text in enumerate(UNRELATED, start=2):
        mem.observe(text, turn=i)
    b = _belief(mem, bid)
    assert b is not None  # ten other-topic turns: a sparse trait survives the talk in between
    rate = mem.config.background_rate * mem.config.gamma
    # each unrelated turn costs background_rate of a step; the encoder may find one of them on-topic (a full
    # step), which is the most it loses here - under the plain clock it would have been pruned at turn 9
    assert w0 - 10 * rate - mem.config.gamma - 1e-6 <= b["confidence"] <= w0 - 10 * rate + 1e-6


def test_eight_same_topic_unsupported_turns_prune(make_mem: Callable[..., PreCoMem]) -> None:
    from precomem import operators as ops

    mem = make_mem()
    bid = mem.observe(PARTY, turn=1).created[0]
    row = mem.store.row_of[bid]
    for t in range(2, 9):  # turns 2..8: evidence on the topic arrived and did not support the belief
        ops.charge(mem.store, row, t)
    assert _belief(mem, bid) is not None
    ops.charge(mem.store, row, 9)  # the eighth
    u = mem.observe(UNRELATED[0], turn=9)
    assert bid in u.pruned and _belief(mem, bid) is None


def test_support_resets_decay_clock(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem()
    bid = mem.observe(PARTY, turn=1).created[0]
    for i, text in enumerate(UNRELATED[:5], start=2):
        mem.observe(text, turn=i)
    assert bid in mem.observe(PARAPHRASES[0], turn=7).reinforced
    for i, text in enumerate(UNRELATED[5:10], start=8):
        mem.observe(text, turn=i)
    b = _belief(mem, bid)
    assert b is not None and b["last_support_turn"] == 7  # alive at turn 12, 11 turns after creation


def test_explicit_event_hypothesis_is_protected(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem()
    u = mem.observe("I moved to Lisbon last week for a new job", turn=1)
    bid = u.created[0]
    first = _belief(mem, bid)
    assert first is not None and first["protected"]
    for i, text in enumerate(UNRELATED, start=2):
        mem.observe(text, turn=i)
    later = _belief(mem, bid)
    # never decays (related turns may still lend it partial support)
    assert later is not None and later["confidence"] >= first["confidence"]


def test_requests_do_not_wreck_beliefs(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem()
    bid = mem.observe(PARTY, turn=1).created[0]
    for i, p in enumerate(PARAPHRASES, start=2):
        mem.observe(p, turn=i)
    before = _belief(mem, bid)
    u = mem.observe("Rewrite this email to my landlord about the broken heater", turn=7)
    assert not u.decayed
    assert _belief(mem, bid)["confidence"] == before["confidence"]  # type: ignore[index]
    req = _belief(mem, u.created[0])
    assert req is not None and req["class"] == "request" and req["confidence"] < 0.4
