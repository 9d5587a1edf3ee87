"""Closed-form belief updates: MAINTAIN reinforcement, PROFILE/CORRECT writes, soft decay, promotion,
pruning."""

from __future__ import annotations

import numpy as np

from precomem.agents import Proposition
from precomem.beliefs import BeliefMeta, BeliefStore
from precomem.config import PreCoMemConfig


def band_confidence(cls: str, agent_conf: float, cfg: PreCoMemConfig) -> float:
    """mean(class prior, agent confidence clipped to the class band): no single agent output commits a
    fact."""
    band = cfg.bands[cls]
    return 0.5 * (band.prior + float(np.clip(agent_conf, band.lo, band.hi)))


def reinforce(store: BeliefStore, row: int, strength: float, turn: int, eta: float) -> float:
    """w <- w + eta * strength * (1 - w); winds the decay clock back in proportion to ``strength``.

    The step starts from the confidence at the last support, not from its decayed value: support resets the
    clock, so a hypothesis that recurs every few turns accumulates instead of losing to decay between cues.
    Full support (strength 1) resets the clock; partial support (a related observation that is not a
    paraphrase) keeps ``1 - strength`` of the unsupported turns, this one included (see :func:`charge`).
    """
    w = float(store.conf[row])
    w = w + eta * strength * (1.0 - w)
    store.conf[row] = min(max(w, 0.0), 1.0)
    if strength >= 0.5:
        store.rivalled[row] = 0.0  # evidence for it again: whatever outcompeted it before no longer counts
    _settle(store, row, turn, strength)
    return float(store.conf[row])


def _settle(store: BeliefStore, row: int, turn: int, strength: float) -> None:
    """Age after evidence at ``turn``: (age so far + the rest of this turn's step) * (1 - strength)."""
    s = min(max(strength, 0.0), 1.0)
    age = store.age_row(row, turn) + (1.0 - store.background)
    store.extra[row] = 0.0 if s >= 1.0 else age * (1.0 - s)
    store.last[row] = turn


def charge(store: BeliefStore, row: int, turn: int) -> None:
    """Related evidence arrived at ``turn`` and did not support this belief: a full unsupported step.

    Unrelated turns only cost ``store.background`` of a step (already counted by :meth:`BeliefStore.age`);
    this adds the rest, so a belief loses gamma for each turn on its topic that fails to support it.
    """
    _settle(store, row, turn, 0.0)


def write(
    store: BeliefStore,
    prop: Proposition,
    emb: np.ndarray,
    tokens: list[str],
    topic: int,
    turn: int,
    *,
    as_fact: bool,
    regime: str,
    cfg: PreCoMemConfig,
) -> str:
    """Store a proposition as a new hypothesis (its class band) or fact (the fact band)."""
    cls = "fact" if as_fact else prop.cls
    conf = band_confidence(cls, prop.confidence, cfg)
    bid = store.new_id()
    meta = BeliefMeta(bid, prop.text, prop.cls, prop.about, tokens, [turn])
    meta.history.append({"turn": turn, "event": "created", "regime": regime, "confidence": round(conf, 4)})
    store.add(meta, emb, conf, turn, fact=as_fact, protected=prop.protected, topic=topic)
    return bid


def soft_decay(store: BeliefStore, row: int, severity: float, turn: int, cfg: PreCoMemConfig) -> float:
    """w <- w * (1 - severity): each contradicted belief loses in proportion to its own contradiction.

    A decayed fact is deprecated (kept for provenance, paper B.1; it ranks below live beliefs); with
    ``deprecate_below_promotion`` only once it falls below the promotion threshold, so a slight decay (a lost
    competition round) leaves it live."""
    w = store.effective_row(row, turn, cfg.gamma) * (1.0 - severity)
    store.conf[row] = w
    if not store.protected[row]:
        store.last[row] = turn  # decay from here on is measured from the correction, not compounded on top of it
        store.extra[row] = 0.0
    # A protected event never decays by the clock; its age only says how old the occasion's evidence is
    # (``event_half_life``), and a contradiction is no fresh evidence of it.
    if store.fact[row] and (w < cfg.promote_threshold or not cfg.deprecate_below_promotion):
        store.deprecated[row] = True
    return w


def promote(store: BeliefStore, row: int, cfg: PreCoMemConfig) -> bool:
    """Turn a hypothesis into a fact once it reaches the promotion threshold; undeprecate a restored fact."""
    if store.conf[row] < cfg.promote_threshold:
        return False
    was_hyp = not store.fact[row]
    store.fact[row] = True
    store.deprecated[row] = False
    return was_hyp


def prune(store: BeliefStore, turn: int, cfg: PreCoMemConfig) -> list[str]:
    """Remove decayed hypotheses (and, in variant A1, weak facts); compact the store when worthwhile."""
    n = store.n
    if n == 0:
        return []
    conf = store.effective(turn, cfg.gamma)
    alive = store.alive[:n]
    dead = alive & ~store.fact[:n] & (conf < cfg.prune_hypotheses_below)
    if cfg.prune_facts_below is not None:
        dead |= alive & store.fact[:n] & (conf < cfg.prune_facts_below)
    ids = store.remove(np.flatnonzero(dead)) if dead.any() else []
    store.maybe_compact()
    return ids
