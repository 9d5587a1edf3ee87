"""Ablation switches change behaviour the way their names say."""

from __future__ import annotations

from collections.abc import Callable

from precomem import PreCoMem
from tests.helpers.precomem_texts import CONTRADICTION, PARAPHRASES, PARTY, UNRELATED


def _party_fact(mem: PreCoMem) -> str:
    bid = mem.observe(PARTY, turn=1).created[0]
    for i, p in enumerate(PARAPHRASES * 2, start=2):
        mem.observe(p, turn=i)
    return bid


def test_no_maintain_never_reinforces(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem(no_maintain=True)
    mem.observe(PARTY, turn=1)
    w0 = mem.snapshot()[0]["confidence"]
    u = mem.observe(PARAPHRASES[0], turn=2)
    assert not u.reinforced and mem.snapshot()[0]["confidence"] < w0


def test_no_correct_turns_contradiction_into_profile(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem(no_correct=True)
    bid = _party_fact(mem)
    u = mem.observe(CONTRADICTION, turn=20)
    assert u.regime == "PROFILE" and not u.decayed
    assert next(b for b in mem.snapshot() if b["id"] == u.created[0])["kind"] == "hypothesis"
    assert next(b for b in mem.snapshot() if b["id"] == bid)["kind"] == "fact"


def test_no_profile_writes_facts_directly(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem(no_profile=True)
    u = mem.observe(PARTY, turn=1)
    assert u.regime in ("MAINTAIN", "CORRECT")
    assert mem.snapshot()[0]["kind"] == "fact"


def test_random_routing_is_seeded(make_mem: Callable[..., PreCoMem]) -> None:
    runs = []
    for _ in range(2):
        mem = make_mem(random_routing=True, seed=7)
        runs.append([mem.observe(t, turn=i).regime for i, t in enumerate(UNRELATED, start=1)])
    assert runs[0] == runs[1] and len(set(runs[0])) > 1


def test_a1_prunes_weak_facts(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem(prune_facts_below=0.5)
    bid = _party_fact(mem)
    u = mem.observe(CONTRADICTION, turn=20)
    mem.observe(UNRELATED[0], turn=21)
    assert bid in u.decayed and all(b["id"] != bid for b in mem.snapshot())
