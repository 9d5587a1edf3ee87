"""Sub-agents backed by an LLM (paper §2.4, B.3-B.4): the extractor and the regimes' target selection.

:class:`LLMAgents` fills the :class:`~precomem.agents.SubAgents` protocol with structured LLM calls: the
extractor says which propositions of an observation to store (text, class, confidence); the MAINTAIN/PROFILE
sub-agent says which retrieved beliefs the proposition supports and how strongly; the CORRECT sub-agent says
which it contradicts and how severely. Gating and the closed-form updates stay in the engine. Replies are
pydantic models sent as JSON schemas: a belief is named by its index into the list the prompt showed (bounded
by ``minimum``/``maximum``, so an index out of range is schema-invalid and retried by the backend), strengths
are floats in [0, 1], and belief ids come from the engine, never from the model.

The LLM and the prompt files are reached through :class:`JSONBackend`, which the caller injects: precomem
imports no LLM client. dimobench provides one (``dimobench.evaluate.systems.precomem_backend``: structured
output, retries honouring Retry-After, the reply cache, its packaged prompts) and registers it under the
``precomem.agent_backends`` entry-point group, which :func:`make_agents` reads. :class:`GuardedAgents` wraps
the LLM agents with the failure policy: a call that still fails after the backend's retries sends the rest of
that observation to :class:`~precomem.agents.RuleAgents` and is counted, never raised. :func:`make_agents`
resolves ``PreCoMemConfig.agents`` without importing any SDK.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, Field, create_model, field_validator

from precomem.agents import Candidate, Proposition, Regime, RuleAgents, SubAgents, Target

VERSION = "1"
"""Version of the sub-agents' request and reply handling (the prompts carry their own versions)."""
PROMPTS = {"system": "precomem/system", "extract": "precomem/extract", "support": "precomem/support",
           "correct": "precomem/correct"}
"""Role -> prompt file under ``prompts/``."""
ABOUT = {"statement": "user", "event": "user", "request": "user", "other": "other", "past": "past"}
"""Whom a proposition of each class is about (the same coupling the rule classifier makes)."""

log = logging.getLogger("precomem")
M = TypeVar("M", bound=BaseModel)


class JSONBackend(Protocol):
    """What :class:`LLMAgents` needs from an LLM: a validated structured reply, retries included."""

    @property
    def spec(self) -> str:
        """``provider/model``, as recorded in stats and reports."""
        ...

    def complete_json(self, messages: list[dict[str, str]], schema: type[M]) -> M:
        """Send chat ``messages`` (``role``/``content``) and return the reply validated into ``schema``.

        Raises after the backend's last retry; :class:`AgentSetupError` when the backend cannot be built at
        all (missing SDK or key), which :class:`GuardedAgents` does not absorb.
        """
        ...

    def render_prompt(self, name: str, **variables: object) -> str:
        """The text of prompt ``name`` (see :data:`PROMPTS`) with ``variables`` filled in."""
        ...

    def prompt_info(self, name: str) -> dict[str, str]:
        """``{"version": ..., "hash": ...}`` of prompt ``name``, for reports."""
        ...


class AgentSetupError(RuntimeError):
    """The LLM behind the sub-agents cannot be used at all (missing SDK, key or provider): never a fallback."""


# ---------------------------------------------------------------------------------------------- replies
class ExtractedProposition(BaseModel):
    """One proposition the extractor keeps."""

    text: str = Field(description="the proposition, in the user's own words where possible")
    """Stored as the belief text."""
    kind: Literal["statement", "event", "request", "other", "past"]
    """The class that selects the confidence band (``about`` follows from it, see :data:`ABOUT`)."""
    confidence: float = Field(ge=0.0, le=1.0)
    """The agent's confidence; the engine clips it to the class band."""

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("a proposition needs text")
        return " ".join(v.split())


@lru_cache(maxsize=16)
def extraction_model(max_props: int) -> type[BaseModel]:
    """``{"propositions": [ExtractedProposition, ...]}`` with at most ``max_props`` items (none allowed)."""
    return create_model("Extraction", propositions=(list[ExtractedProposition], Field(max_length=max_props)))


@lru_cache(maxsize=64)
def targets_model(role: Literal["support", "correct"], n: int) -> type[BaseModel]:
    """``{"reason": str, "targets": [{"index": 0..n-1, "strength"|"severity": 0..1}, ...]}``."""
    value = "strength" if role == "support" else "severity"
    score: dict[str, Any] = {value: (float, Field(ge=0.0, le=1.0))}
    item = create_model(
        "SupportTarget" if role == "support" else "ContradictedBelief",
        index=(int, Field(ge=0, le=n - 1, description="index of the belief in the list")),
        **score,
    )
    return create_model("SupportTargets" if role == "support" else "Contradictions",
                        reason=(str, Field(description="one short sentence")),
                        targets=(list[item], Field(max_length=n)))


# ---------------------------------------------------------------------------------------------- agents
class LLMAgents:
    """The sub-agents as LLM calls; see the module docstring. Raises when a call fails (see GuardedAgents)."""

    def __init__(self, backend: JSONBackend) -> None:
        """Ask ``backend`` for every decision."""
        self.backend = backend
        self.calls = 0
        """Calls asked of the backend (cache hits included)."""

    @property
    def name(self) -> str:
        """The backend's ``provider/model``, which names these agents in reports."""
        return self.backend.spec

    def describe(self) -> dict[str, Any]:
        """Spec, version and prompt versions and hashes (what a report records; no URL or key)."""
        return {"spec": self.backend.spec, "version": VERSION,
                "prompts": {name: self.backend.prompt_info(name) for name in PROMPTS.values()}}

    def _ask(self, role: str, schema: type[M], **variables: object) -> M:
        system = self.backend.render_prompt(PROMPTS["system"])
        user = self.backend.render_prompt(PROMPTS[role], **variables)
        self.calls += 1
        return self.backend.complete_json([{"role": "system", "content": system},
                                           {"role": "user", "content": user}], schema)

    def extract(self, text: str, max_props: int, split_min_words: int) -> list[Proposition]:
        """The propositions the extractor keeps (possibly none); explicit events are protected."""
        text = " ".join(text.split())
        if not text or max_props < 1:
            return []
        reply: Any = self._ask("extract", extraction_model(max_props), text=text, max_props=max_props,
                               split_min_words=split_min_words)
        return [Proposition(p.text, p.kind, ABOUT[p.kind], float(p.confidence), protected=p.kind == "event")
                for p in reply.propositions[:max_props]]

    def targets(
        self,
        regime: Regime,
        prop: Proposition,
        cands: list[Candidate],
        support: float,
        contra: float,
        related: float | None = None,
    ) -> list[Target]:
        """MAINTAIN/PROFILE: beliefs the proposition supports, with strengths; CORRECT: beliefs it contradicts,
        with severities. No call without candidates; like the rules, only the user's own present-tense
        statements and events may correct anything (the engine's invariant, not a model decision)."""
        if not cands:
            return []
        role: Literal["support", "correct"] = "correct" if regime == "CORRECT" else "support"
        if role == "correct" and (prop.about != "user" or prop.cls == "request"):
            return []
        beliefs = [{"index": i, "text": " ".join(c.text.split()), "kind": c.kind, "about": c.about}
                   for i, c in enumerate(cands)]
        reply: Any = self._ask(role, targets_model(role, len(cands)), proposition=prop.text, kind=prop.cls,
                               about=prop.about, beliefs=beliefs)
        best: dict[int, float] = {}
        for t in reply.targets:
            value = float(t.strength if role == "support" else t.severity)
            best[t.index] = max(best.get(t.index, 0.0), value)
        return [Target(cands[i].id, v) for i, v in sorted(best.items()) if v > 0.0]


class GuardedAgents:
    """The failure policy around LLM agents: a failed call sends the rest of its observation to the rules.

    The engine calls ``extract`` once at the start of every observation, then ``targets``; so ``extract``
    opens an observation. ``fallbacks`` counts observations that fell back, ``failures`` failed calls.
    """

    def __init__(self, primary: SubAgents, fallback: SubAgents | None = None) -> None:
        """Use ``primary``; on failure, ``fallback`` (the rule agents) for the rest of the observation."""
        self.primary = primary
        self.fallback: SubAgents = fallback or RuleAgents()
        self.fallbacks = 0
        self.failures = 0
        self.last_error = ""
        self._degraded = False

    @property
    def name(self) -> str:
        """Both agents' names as ``primary+fallback`` (``openai/<model>+rule``)."""
        return f"{self.primary.name}+{self.fallback.name}"

    def describe(self) -> dict[str, Any]:
        """The primary's description with the fallback named."""
        inner = getattr(self.primary, "describe", None)
        return {**(inner() if callable(inner) else {"spec": self.primary.name}), "fallback": self.fallback.name}

    def _failed(self, exc: Exception) -> None:
        if isinstance(exc, AgentSetupError):
            raise exc
        self.failures += 1
        self.last_error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if not self._degraded:
            self._degraded = True
            self.fallbacks += 1
        log.warning("precomem sub-agent %s failed; rules take the rest of this observation: %s",
                    self.primary.name, self.last_error)

    def extract(self, text: str, max_props: int, split_min_words: int) -> list[Proposition]:
        """Open an observation and extract, by the primary unless it fails."""
        self._degraded = False
        try:
            return self.primary.extract(text, max_props, split_min_words)
        except Exception as exc:
            self._failed(exc)
        return self.fallback.extract(text, max_props, split_min_words)

    def targets(
        self,
        regime: Regime,
        prop: Proposition,
        cands: list[Candidate],
        support: float,
        contra: float,
        related: float | None = None,
    ) -> list[Target]:
        """The primary's targets, or the rules' once this observation has fallen back."""
        if not self._degraded:
            try:
                return self.primary.targets(regime, prop, cands, support, contra, related)
            except Exception as exc:
                self._failed(exc)
        return self.fallback.targets(regime, prop, cands, support, contra, related)


BACKENDS_GROUP = "precomem.agent_backends"
"""Entry-point group of LLM backend factories: ``factory(spec, base_url=..., cache_dir=...) -> JSONBackend``."""


def make_agents(spec: str, *, base_url: str | None = None, cache_dir: Path | None = None) -> SubAgents:
    """``rules`` -> :class:`RuleAgents`; ``openai/<model>`` or ``gemini/<model>`` -> guarded LLM agents.

    The backend comes from the first factory registered under :data:`BACKENDS_GROUP` (dimobench registers
    one; SDKs load only at the first call); ``base_url`` and ``cache_dir`` default to the provider's endpoint
    (or ``OPENAI_BASE_URL``) and the shared reply cache. To use another client, build the agents yourself:
    ``PreCoMem(config, agents=GuardedAgents(LLMAgents(my_backend)))``.
    """
    if spec == "rules":
        return RuleAgents()
    from importlib.metadata import entry_points

    found = sorted(entry_points(group=BACKENDS_GROUP), key=lambda ep: ep.name)
    if not found:
        raise AgentSetupError(f"agents {spec!r} need an LLM backend: install dimobench (it registers one under "
                              f"{BACKENDS_GROUP!r}) or pass agents=GuardedAgents(LLMAgents(backend)) to PreCoMem")
    factory = found[0].load()
    return guarded_llm_agents(factory(spec, base_url=base_url, cache_dir=cache_dir))


def guarded_llm_agents(backend: JSONBackend) -> GuardedAgents:
    """LLM sub-agents over ``backend``, with the rules taking over an observation whose call failed."""
    return GuardedAgents(LLMAgents(backend))
