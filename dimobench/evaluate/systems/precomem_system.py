"""PreCoMem and its ablations behind the adapter contract (the engine itself lives in ``precomem/``)."""

from __future__ import annotations

from typing import Any

ABLATIONS: dict[str, dict[str, Any]] = {
    "": {},
    "no_profile": {"no_profile": True},
    "no_correct": {"no_correct": True},
    "no_maintain": {"no_maintain": True},
    "no_reliability": {"no_reliability": True},
    "no_confidence": {"no_confidence": True},
    "random_routing": {"random_routing": True},
    "a1": {"prune_facts_below": 0.05},
}
"""Variant name -> PreCoMemConfig overrides (``a1``: prune facts below 0.05, per paper)."""


class PreCoMemSystem:
    """One PreCoMem engine per persona; observes the user's utterances."""

    def __init__(self, variant: str = "", **config: Any) -> None:
        """``variant``: one of :data:`ABLATIONS`; ``config``: extra PreCoMemConfig fields."""
        from precomem import PreCoMemConfig

        if variant not in ABLATIONS:
            raise ValueError(f"unknown PreCoMem variant {variant!r} (choose from {', '.join(filter(None, ABLATIONS))})")
        self.config = PreCoMemConfig(**{**ABLATIONS[variant], **config})
        self.mem: Any = None

    def reset(self, persona_id: str) -> None:
        """Start a fresh engine (models are shared within the process, so this is cheap)."""
        from precomem import PreCoMem

        self.mem = PreCoMem(self.config)

    def observe(self, turn: Any) -> None:
        """Feed the user's utterance with its turn number and timestamp."""
        text = str(turn["user"])
        if text.strip():
            self.mem.observe(text, turn=int(turn["turn"]), timestamp=turn["timestamp"])

    def recall(self, query: str, k: int) -> list[Any]:
        """The engine's top-k beliefs (RecallItem: text, score, source_turns, confidence, kind)."""
        return list(self.mem.recall(query, k=k))

    def stats(self) -> dict[str, Any]:
        """Engine memory metrics (raw_items, effective_memory, n_active, deprecated, encoders, ...)."""
        return dict(self.mem.stats())
