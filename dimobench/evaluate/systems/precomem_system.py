"""PreCoMem and its ablations behind the system protocol (the engine itself lives in ``precomem/``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from precomem.config import PAPER, PREVIOUS

ABLATIONS: dict[str, dict[str, Any]] = {
    "": {},
    "no_profile": {"no_profile": True},
    "no_correct": {"no_correct": True},
    "no_maintain": {"no_maintain": True},
    "no_reliability": {"no_reliability": True},
    "no_confidence": {"no_confidence": True},
    "random_routing": {"random_routing": True},
    "a1": {"prune_facts_below": 0.05},
    "aging": {"partial_support_similarity": 0.3, "event_half_life": 25.0},
    "paper": dict(PAPER),
    "previous": dict(PREVIOUS),
}
"""Variant name -> PreCoMemConfig overrides (``a1``: prune facts below 0.05, per paper; ``aging``: occasions
age for questions about the present and only a clearly related turn supports a belief, our departure for suites
whose drift is told through occasions (docs/measurements.md, "Implicit drift: ``precomem:aging``"); ``paper``: the
configuration that follows the paper and passes ``../shared/conformance``, :meth:`PreCoMemConfig.paper`)."""


def is_engine(name: str) -> bool:
    """True for ``precomem`` and its built-in variants (``precomem:<variant>``)."""
    head, _, variant = name.partition(":")
    return head == "precomem" and variant in ABLATIONS


def engine_settings(name: str, agents: str = "rules") -> dict[str, Any]:
    """The full PreCoMemConfig a built-in PreCoMem system runs with (``agents``: its sub-agents), where it runs
    aside: recorded in the report and in the resume fingerprint, so a variant whose settings changed is never
    resumed into the answers of the old ones. Where it runs and on how many threads are left out: they do not
    change an answer (tests/precomem/test_onnx_runtime.py, test_device.py)."""
    from precomem import PreCoMemConfig

    config = PreCoMemConfig(**{**ABLATIONS[name.partition(":")[2]], "agents": agents})
    return config.model_dump(mode="json", exclude={"device", "encode_threads"})


class PreCoMemSystem:
    """One PreCoMem engine per persona; observes the user's utterances."""

    def __init__(self, variant: str = "", *, base_url: str | None = None, cache_dir: Path | None = None,
                 **config: Any) -> None:
        """``variant``: one of :data:`ABLATIONS`; ``config``: extra PreCoMemConfig fields, ``agents`` among them
        (``rules``, ``openai/<model>``, ``gemini/<model>``); ``base_url``/``cache_dir``: where LLM agents go."""
        from precomem import PreCoMemConfig

        if variant not in ABLATIONS:
            raise ValueError(f"unknown PreCoMem variant {variant!r} (choose from {', '.join(filter(None, ABLATIONS))})")
        self.config = PreCoMemConfig(**{**ABLATIONS[variant], **config})
        self.mem: Any = None
        self.backend: Any = None
        if self.config.agents != "rules":
            from dimobench.evaluate.systems.precomem_backend import AgentBackend

            # One backend (client and reply cache) for every persona, resolved now so that a missing key or
            # SDK fails before the replay starts instead of sending every observation to the rules.
            self.backend = AgentBackend(self.config.agents, base_url=base_url, cache_dir=cache_dir)
            self.backend.resolve()

    def reset(self, persona_id: str) -> None:
        """Start a fresh engine (models are shared within the process, so this is cheap)."""
        from precomem import PreCoMem

        agents = None
        if self.backend is not None:
            from precomem.llm_agents import guarded_llm_agents

            agents = guarded_llm_agents(self.backend)
        self.mem = PreCoMem(self.config, agents)

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
