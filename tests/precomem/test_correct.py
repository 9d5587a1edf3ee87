"""CORRECT: a clear contradiction of a reinforced fact stores the new fact and softly decays the old one."""

from __future__ import annotations

from collections.abc import Callable

from precomem import PreCoMem
from tests.helpers.precomem_texts import CONTRADICTION, PARAPHRASES, PARTY

OTHER_TOPICS = [
    "I go hiking in the mountains most Sundays",
    "I work as a nurse on the night shift",
    "I drink two cups of coffee every morning",
]


def _base(mem: PreCoMem, bid: str) -> tuple[float, int]:
    row = mem.store.row_of[bid]
    return float(mem.store.conf[row]), int(mem.store.last[row])


def _weeks_of_parties(mem: PreCoMem) -> tuple[str, dict[str, float]]:
    bid = mem.observe(PARTY, turn=1).created[0]
    turn = 2
    for text in OTHER_TOPICS:
        mem.observe(text, turn=turn)
        turn += 1
    for p in PARAPHRASES * 2:
        mem.observe(p, turn=turn)
        turn += 1
    # Keep the other beliefs alive and supported too, so "unchanged" is tested on real beliefs.
    for text in OTHER_TOPICS:
        mem.observe(text, turn=turn)
        turn += 1
    return bid, {b["id"]: b["confidence"] for b in mem.snapshot()}


def test_contradiction_routes_to_correct_and_decays_softly(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem()
    bid, before = _weeks_of_parties(mem)
    snap = {b["id"]: b for b in mem.snapshot()}
    assert snap[bid]["kind"] == "fact" and snap[bid]["confidence"] > 0.8
    base = {b: _base(mem, b) for b in before}
    u = mem.observe(CONTRADICTION, turn=mem.turn + 1)
    assert u.regime == "CORRECT", u
    assert u.contradiction >= 0.6 and u.surprisal >= mem.config.threshold_high
    assert u.decayed == [bid]
    after = {b["id"]: b for b in mem.snapshot()}
    new = after[u.created[0]]
    assert new["kind"] == "fact" and new["text"] == CONTRADICTION
    old = after[bid]  # kept for provenance, softly decayed, marked deprecated
    assert old["deprecated"] and 0.0 < old["confidence"] < before[bid] * 0.5
    assert old["provenance"]["events"][-1]["event"] == "decayed"
    for other in before:
        if other != bid:  # not contradicted: stored confidence and decay clock untouched
            assert base[other] == _base(mem, other)
    now = [it.id for it in mem.recall("does the user like loud parties?")]
    assert u.created[0] in now and bid not in now  # what the user changed stays out of the present
    before_q = [it.id for it in mem.recall("did the user like loud parties before?")]
    assert bid in before_q  # and is there for a question about the past
    assert mem.stats()["deprecated"] == 1
    mem.config = mem.config.model_copy(update={"deprecated_recall": "ranked"})
    ranked = [it.id for it in mem.recall("does the user like loud parties?")]
    assert ranked.index(u.created[0]) < ranked.index(bid)  # the variant: ranked below its correction


def test_decay_is_proportional_to_each_items_own_severity(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem()
    bid, before = _weeks_of_parties(mem)
    u = mem.observe(CONTRADICTION, turn=mem.turn + 1)
    ev = next(b for b in mem.snapshot() if b["id"] == bid)["provenance"]["events"][-1]
    severity = ev["severity"]
    after = next(b for b in mem.snapshot() if b["id"] == bid)["confidence"]
    assert u.regime == "CORRECT"
    assert abs(after - before[bid] * (1 - severity)) < 1e-3


def test_third_party_and_past_never_correct_the_user(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem()
    bid, before = _weeks_of_parties(mem)
    for i, text in enumerate(
        [
            "My roommate can't stand loud parties anymore and avoids them",
            "Jake hates loud parties and never goes to them",
            "Back in college I used to avoid loud parties",
        ]
    ):
        u = mem.observe(text, turn=mem.turn + 1 + i)
        assert not u.decayed, text
    assert next(b for b in mem.snapshot() if b["id"] == bid)["confidence"] == before[bid]
