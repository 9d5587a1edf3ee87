"""Snapshots (readable list of beliefs) and full state (exact reload) for
:class:`~precomem.engine.PreCoMem`."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import numpy as np

from precomem import topics
from precomem.agents import SubAgents
from precomem.beliefs import BeliefMeta
from precomem.config import PreCoMemConfig
from precomem.episodic import EpisodicCache

if TYPE_CHECKING:
    from precomem.engine import PreCoMem

STATE_FORMAT = "precomem-state"
STATE_VERSION = 1


def snapshot(mem: PreCoMem) -> list[dict[str, Any]]:
    """Live beliefs with their provenance, confidence taken at the engine's current turn."""
    store = mem.store
    conf = store.effective(mem.turn, mem.config.gamma)
    enc = mem.encoders()
    out = []
    for r in store.live_rows().tolist():
        m = store.meta[r]
        out.append(
            {
                "id": m.id,
                "text": m.text,
                "kind": "fact" if store.fact[r] else "hypothesis",
                "confidence": round(float(conf[r]), 6),
                "topic": topics.TOPICS[store.topic[r]],
                "created_turn": int(store.created[r]),
                "as_of_turn": int(mem.turn),  # the turn "confidence" was taken at (decay up to it is in it)
                # the last turn that was evidence for it (store.last also moves when related evidence is
                # charged against it; the decay clock is store.age)
                "last_support_turn": int(max(m.source_turns)) if m.source_turns else int(store.last[r]),
                "deprecated": bool(store.deprecated[r]),
                "protected": bool(store.protected[r]),
                "class": m.cls,
                "about": m.about,
                "provenance": {"source_turns": list(m.source_turns), "events": list(m.history), **enc},
            }
        )
    return out


def _b64(arr: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(arr, dtype=np.float32).tobytes()).decode("ascii")


def dump_state(mem: PreCoMem) -> dict[str, Any]:
    """Full state: config, counters, RNG, episodes and every live belief with its exact embedding."""
    store = mem.store
    beliefs = []
    for r in store.live_rows().tolist():
        m = store.meta[r]
        beliefs.append(
            {
                "id": m.id,
                "text": m.text,
                "cls": m.cls,
                "about": m.about,
                "tokens": m.tokens,
                "source_turns": m.source_turns,
                "history": m.history,
                "conf": float(store.conf[r]),
                "last": int(store.last[r]),
                "extra": float(store.extra[r]),
                "created": int(store.created[r]),
                "fact": bool(store.fact[r]),
                "protected": bool(store.protected[r]),
                "deprecated": bool(store.deprecated[r]),
                "rivalled": float(store.rivalled[r]),
                "topic": int(store.topic[r]),
                "emb": _b64(store.emb[r]),
            }
        )
    return {
        "format": STATE_FORMAT,
        "version": STATE_VERSION,
        "config": mem.config.model_dump(mode="json", exclude={"device"}),  # where it ran is not a setting
        "encoders": mem.encoders(),
        "turn": mem.turn,
        "next_id": store.next_id,
        "counts": dict(mem.counts),
        "recalls": [mem._recalls, mem._deprecated_slots],
        "rng": mem.rng.bit_generator.state,
        "episodes": mem.episodes.to_list(),
        "beliefs": beliefs,
    }


def load(
    cls: type[PreCoMem],
    state: dict[str, Any] | list[dict[str, Any]],
    config: PreCoMemConfig | None,
    agents: SubAgents | None,
) -> PreCoMem:
    """Rebuild an engine from :func:`dump_state` output or from a :func:`snapshot` list."""
    if isinstance(state, list):
        return _from_snapshot_list(cls, state, config, agents)
    if state.get("format") != STATE_FORMAT:
        raise ValueError("not a PreCoMem state: expected format 'precomem-state' (use PreCoMem.state())")
    mem = cls(config or PreCoMemConfig.model_validate(state["config"]), agents)
    if mem.encoder.name != state["encoders"]["embedding"]:
        raise ValueError(f"state was built with encoder {state['encoders']['embedding']!r}, not {mem.encoder.name!r}")
    store = mem.store
    for b in state["beliefs"]:
        meta = BeliefMeta(
            b["id"],
            b["text"],
            b["cls"],
            b["about"],
            list(b["tokens"]),
            list(b["source_turns"]),
            list(b["history"]),
        )
        emb = np.frombuffer(base64.b64decode(b["emb"]), dtype=np.float32)
        r = store.add(meta, emb, b["conf"], b["created"], fact=b["fact"], protected=b["protected"], topic=b["topic"])
        store.last[r], store.deprecated[r] = b["last"], b["deprecated"]
        store.extra[r] = float(b.get("extra", 0.0))
        store.rivalled[r] = float(b.get("rivalled", 0.0))
    store.next_id = int(state["next_id"])
    mem.turn = int(state["turn"])
    mem.counts = dict(state["counts"])
    mem._recalls, mem._deprecated_slots = int(state["recalls"][0]), float(state["recalls"][1])
    mem.rng.bit_generator.state = state["rng"]
    mem.episodes = EpisodicCache.from_list(state["episodes"])
    return mem


def _from_snapshot_list(
    cls: type[PreCoMem], items: list[dict[str, Any]], config: PreCoMemConfig | None, agents: SubAgents | None
) -> PreCoMem:
    """Approximate reload from the readable snapshot: texts are re-encoded, and each confidence is the one the
    snapshot took at its ``as_of_turn`` (a decaying hypothesis's clock restarts there, its decay so far being in
    the confidence; facts and protected events age from their last support; a snapshot written before
    ``as_of_turn`` existed restarts every clock at the last support). What the snapshot does not
    hold is lost: how far partial support had wound each clock back, and rival rounds lost since the last
    support (use :meth:`PreCoMem.state` for an exact reload)."""
    from precomem.encoders import tokenize

    mem = cls(config, agents)
    if not items:
        return mem
    emb = mem.encoder.encode([it["text"] for it in items])
    store = mem.store
    for it, e in zip(items, emb, strict=True):
        meta = BeliefMeta(
            it["id"],
            it["text"],
            it.get("class", "statement"),
            it.get("about", "user"),
            tokenize(it["text"]),
            list(it["provenance"]["source_turns"]),
            list(it["provenance"].get("events", [])),
        )
        topic = topics.TOPICS.index(it["topic"]) if it.get("topic") in topics.TOPICS else len(topics.TOPICS) - 1
        r = store.add(
            meta,
            e,
            float(it["confidence"]),
            int(it["created_turn"]),
            fact=it["kind"] == "fact",
            protected=bool(it.get("protected", False)),
            topic=topic,
        )
        # A decaying hypothesis's confidence already holds its decay up to as_of_turn, so its clock restarts
        # there; a fact or a protected event keeps its stored confidence and ages from its last support (what
        # ``event_half_life`` reads).
        decays = it["kind"] != "fact" and not bool(it.get("protected", False))
        store.last[r] = int(it.get("as_of_turn", it["last_support_turn"])) if decays else int(it["last_support_turn"])
        store.deprecated[r] = bool(it.get("deprecated", False))
    store.next_id = 1 + max(int(str(it["id"]).lstrip("b") or 0) for it in items)
    mem.turn = max(int(it.get("as_of_turn", it["last_support_turn"])) for it in items)
    return mem


def stats(mem: PreCoMem) -> dict[str, Any]:
    """Memory metrics as plain JSON types: sizes, effective memory, regimes, deprecated share of top-k slots."""
    store, cfg = mem.store, mem.config
    live = store.live_rows()
    conf = store.effective(mem.turn, cfg.gamma)[live]
    facts = store.fact[live]
    return {
        "turn": mem.turn,
        "raw_items": int(len(live)),
        "effective_memory": round(float(conf.sum()), 4),
        "n_active": int((conf >= cfg.active_threshold).sum()),
        "active_threshold": cfg.active_threshold,
        "facts": int(facts.sum()),
        "hypotheses": int((~facts).sum()),
        "deprecated": int(store.deprecated[live].sum()),
        "deprecated_share_topk": round(mem._deprecated_slots / mem._recalls, 4) if mem._recalls else 0.0,
        "episodes": len(mem.episodes),
        "regimes": dict(mem.counts),
        "agents_fallbacks": int(getattr(mem.agents, "fallbacks", 0)),
        "encoders": mem.encoders(),
    }
