"""Snapshots are JSON-serialisable; a saved state reloads into an engine that continues identically."""

from __future__ import annotations

import json
from collections.abc import Callable

from precomem import PreCoMem
from tests.helpers.precomem_texts import CONTRADICTION, PARAPHRASES, PARTY, UNRELATED

FIELDS = {"id", "text", "kind", "confidence", "topic", "created_turn", "last_support_turn", "provenance"}


def _stream() -> list[str]:
    return [PARTY, *PARAPHRASES, *UNRELATED[:4], CONTRADICTION, *UNRELATED[4:], *PARAPHRASES[:2]]


def test_snapshot_and_stats_are_plain_json(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem()
    for i, t in enumerate(_stream(), start=1):
        mem.observe(t, turn=i, timestamp=f"2024-03-{i:02d}T10:00:00")
    snap = mem.snapshot()
    assert snap and all(FIELDS <= set(b) for b in snap)
    assert json.loads(json.dumps(snap)) == snap
    stats = mem.stats()
    assert json.loads(json.dumps(stats)) == stats
    assert {"raw_items", "effective_memory", "n_active", "deprecated", "encoders"} <= set(stats)
    assert stats["effective_memory"] == round(sum(b["confidence"] for b in snap), 4)
    assert stats["encoders"]["embedding"] == mem.encoder.name
    assert snap[0]["provenance"]["embedding"] == mem.encoder.name


def test_state_reload_continues_identically(make_mem: Callable[..., PreCoMem]) -> None:
    stream = _stream()
    mem = make_mem(random_routing=False)
    for i, t in enumerate(stream[:10], start=1):
        mem.observe(t, turn=i)
    mem.recall("parties")
    state = json.loads(json.dumps(mem.state()))
    clone = PreCoMem.from_snapshot(state)
    assert clone.snapshot() == mem.snapshot() and clone.stats() == mem.stats()
    for i, t in enumerate(stream[10:], start=11):
        a, b = mem.observe(t, turn=i), clone.observe(t, turn=i)
        assert a.to_dict() == b.to_dict()
    assert clone.snapshot() == mem.snapshot()
    assert [x.to_dict() for x in clone.recall("loud parties")] == [x.to_dict() for x in mem.recall("loud parties")]


def test_random_routing_state_reload_keeps_the_rng(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem(random_routing=True, seed=3)
    for i, t in enumerate(UNRELATED[:5], start=1):
        mem.observe(t, turn=i)
    clone = PreCoMem.from_snapshot(json.loads(json.dumps(mem.state())))
    for i, t in enumerate(UNRELATED[5:], start=6):
        assert mem.observe(t, turn=i).regime == clone.observe(t, turn=i).regime


def test_snapshot_list_reload_is_approximate_but_usable(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem()
    for i, t in enumerate(_stream()[:8], start=1):
        mem.observe(t, turn=i)
    clone = PreCoMem.from_snapshot(mem.snapshot(), mem.config)
    assert [b["text"] for b in clone.snapshot()] == [b["text"] for b in mem.snapshot()]
    assert clone.recall("loud parties")[0].text == mem.recall("loud parties")[0].text


def test_snapshot_list_reload_keeps_confidences_and_turn(make_mem: Callable[..., PreCoMem]) -> None:
    # A snapshot's confidence is already decayed to the turn it was taken at; reloading must not decay it a
    # second time from the last support (that pruned hypotheses the saved engine still held).
    mem = make_mem()
    for i, t in enumerate([PARTY, *UNRELATED[:5]], start=1):
        mem.observe(t, turn=i)
    snap = mem.snapshot()
    assert any(b["kind"] == "hypothesis" and b["last_support_turn"] < mem.turn for b in snap)
    clone = PreCoMem.from_snapshot(json.loads(json.dumps(snap)), mem.config)
    assert clone.turn == mem.turn
    assert [(b["id"], b["confidence"]) for b in clone.snapshot()] == [(b["id"], b["confidence"]) for b in snap]


def test_snapshot_list_reload_keeps_a_protected_events_age(make_mem: Callable[..., PreCoMem]) -> None:
    # A protected event never decays; its age since the last support is what ``event_half_life`` reads, so a
    # reload must not make an old occasion young again.
    mem = make_mem(event_half_life=5.0)
    for i, t in enumerate(["I went to a pottery class yesterday and loved it.", *UNRELATED[:6]], start=1):
        mem.observe(t, turn=i)
    rows = [r for r in mem.store.live_rows().tolist() if mem.store.protected[r]]
    assert rows and mem.store.age(mem.turn)[rows[0]] >= 5
    clone = PreCoMem.from_snapshot(json.loads(json.dumps(mem.snapshot())), mem.config)
    twin = clone.store.row_of[mem.store.meta[rows[0]].id]
    # partial support that wound the clock back is not in the snapshot: the age is counted from the last support
    assert abs(clone.store.age(clone.turn)[twin] - mem.store.age(mem.turn)[rows[0]]) < 1.0
