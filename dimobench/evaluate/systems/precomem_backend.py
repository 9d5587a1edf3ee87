"""dimobench's backends behind precomem's :class:`~precomem.llm_agents.JSONBackend` (PreCoMem sub-agents).

:class:`AgentBackend` turns ``complete_json(messages, schema)`` into a backend :class:`Request` at
temperature 0 with a fixed seed, so every reply is cached (content-addressed; a warm rerun makes no call) and
retried by the shared policy (429 with Retry-After, 5xx, timeouts, invalid JSON and schema-invalid replies
such as an index out of range). The provider's SDK is imported on the first call, or by :meth:`resolve`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from dimobench import prompts
from dimobench.backends import normalize_spec, resolve_backend
from dimobench.backends.base import ChatLLM, Message, Request
from dimobench.backends.usage import Ledger
from dimobench.errors import ConfigError, DimobenchError
from precomem.llm_agents import AgentSetupError, LLMAgents, guarded_llm_agents

TEMPERATURE = 0.0
SEED = 0
MAX_TOKENS = 1024
FLAG = "--agents"

M = TypeVar("M", bound=BaseModel)


class AgentBackend:
    """A dimobench chat backend (cached, retried) as precomem's ``JSONBackend``; counts calls in ``ledger``."""

    def __init__(self, spec: str, *, base_url: str | None = None, cache_dir: Path | None = None,
                 llm: ChatLLM | None = None) -> None:
        """``spec``: ``openai[/<model>]`` or ``gemini[/<model>]``; ``llm`` replaces the resolved backend."""
        try:
            self._spec = normalize_spec(spec, FLAG)
        except DimobenchError as exc:
            raise AgentSetupError(str(exc)) from None
        if self._spec == "offline":
            raise AgentSetupError(f"{FLAG} offline: use 'rules' for the deterministic sub-agents")
        self.base_url, self.cache_dir = base_url, cache_dir
        self._llm = llm
        self.ledger = Ledger(self._spec)

    @property
    def spec(self) -> str:
        """The ``--agents`` backend as ``provider/model``, recorded with the run."""
        return self._spec

    def resolve(self) -> ChatLLM:
        """The backend (built once); :class:`~precomem.llm_agents.AgentSetupError` without its SDK or key."""
        if self._llm is None:
            try:
                self._llm = resolve_backend(self._spec, base_url=self.base_url,  # type: ignore[assignment]
                                            cache_dir=self.cache_dir)
            except DimobenchError as exc:
                raise AgentSetupError(str(exc)) from None
        return self._llm  # type: ignore[return-value]

    def complete_json(self, messages: list[dict[str, str]], schema: type[M]) -> M:
        """One structured call; raises ``BackendError`` (redacted) after the last retry."""
        llm = self.resolve()
        request = Request(messages=[Message(**m) for m in messages], response_model=schema,
                          temperature=TEMPERATURE, seed=SEED, max_tokens=MAX_TOKENS, item=f"precomem/{schema.__name__}")
        return self.ledger.call(llm, request).parsed

    def render_prompt(self, name: str, **variables: object) -> str:
        """The prompt file ``name`` from dimobench's ``prompts/``, rendered strictly."""
        return prompts.render(name, **variables).text

    def prompt_info(self, name: str) -> dict[str, str]:
        """Version and hash of prompt ``name``."""
        loaded = prompts.load(name)
        return {"version": loaded.version, "hash": loaded.hash}


def check_agents(spec: str) -> str:
    """``rules``, or the normalised ``provider/model`` of ``--agents``; ``ConfigError`` in one line otherwise."""
    spec = spec.strip()
    if spec == "rules":
        return spec
    spec = normalize_spec(spec, FLAG)
    if spec == "offline":
        raise ConfigError(f"{FLAG} offline: the deterministic sub-agents are called 'rules'")
    return spec


def llm_agents(spec: str, *, base_url: str | None = None, cache_dir: Path | None = None,
               llm: ChatLLM | None = None) -> Any:
    """Guarded LLM sub-agents (rules take over an observation whose call failed) over ``spec``'s backend."""
    return guarded_llm_agents(AgentBackend(spec, base_url=base_url, cache_dir=cache_dir, llm=llm))


def describe_agents(spec: str) -> dict[str, Any] | str:
    """What report.json records about the sub-agents: ``rules``, or spec, prompts and sampling (no URL or key)."""
    if spec == "rules":
        return "rules"
    agents = LLMAgents(AgentBackend(spec))
    provider, _, model = agents.name.partition("/")
    return {**agents.describe(), "provider": provider, "model": model, "temperature": TEMPERATURE, "seed": SEED,
            "fallback": "rule"}
