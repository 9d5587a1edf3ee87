"""``mem0``: mem0's OSS ``Memory`` with its LLM memory policy on (``add(..., infer=True)``).

Each user turn goes through mem0's own pipeline: it searches the persona's existing memories, asks its LLM to
extract self-contained facts (mem0 2.x's single additive-extraction call, ``{"memory": [{"text", ...}]}``),
deduplicates them by hash and stores them in FAISS with the packaged MiniLM (embeddings never go to the LLM
server). ``search`` ranks the extracted facts, so recall returns what the LLM wrote, each with the turn it came
from (mem0 copies the ``add`` metadata onto every fact).

mem0 is configured with an ``openai`` LLM provider on the ``--memory-llm`` model and ``--base-url``; its client
is then replaced by a facade over dimobench's backend (:mod:`.memory_llm`: cache, retries, the key read from
``OPENAI_API_KEY`` by dimobench only). mem0 writes today's date into its prompt; during a replay the turn's date
stands in for today, so the prompt, and the cache key, depend on the suite rather than on the day it runs.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from importlib.metadata import version
from typing import Any, Literal

from pydantic import BaseModel

from dimobench.evaluate.protocol import SystemFailure
from dimobench.evaluate.systems.adapters import user_text
from dimobench.evaluate.systems.adapters.mem0_raw import Mem0Raw, open_memory
from dimobench.evaluate.systems.adapters.memory_llm import MemoryLLM

MAX_TOKENS = 2000
"""mem0's own default ``max_tokens``."""


class Mem0Fact(BaseModel):
    """One memory as mem0's additive-extraction prompt asks for it."""

    id: str
    """Sequential integers as strings, from "0"."""
    text: str
    """A self-contained factual statement; this is what mem0 stores and recall returns."""
    attributed_to: Literal["user", "assistant"]
    """Whom the fact is about."""
    linked_memory_ids: list[str]
    """Ids of related existing memories (optional in mem0's prompt; [] when none)."""


class Mem0Extraction(BaseModel):
    """The reply mem0 parses (``json.loads(reply)["memory"]``)."""

    memory: list[Mem0Fact]


class Mem0LLM:
    """mem0's LLM interface (``generate_response``) over :class:`MemoryLLM`; only the JSON extraction is bridged."""

    def __init__(self, llm: MemoryLLM) -> None:
        """Wrap ``llm``."""
        self.llm = llm

    def generate_response(self, messages: list[dict[str, Any]], response_format: Any = None, tools: Any = None,
                          tool_choice: str = "auto", **kwargs: Any) -> str:
        """The extraction reply's JSON text (mem0 asks for ``{"type": "json_object"}`` with no schema)."""
        if tools or not (isinstance(response_format, dict) and response_format.get("type") == "json_object"):
            raise SystemFailure("mem0 asked its LLM for tools or plain text; the mem0 adapter bridges only its JSON "
                                "fact extraction")
        return self.llm.complete(messages, Mem0Extraction, MAX_TOKENS, "mem0/extract")


@contextlib.contextmanager
def _dated(today: str, timestamp: str) -> Iterator[None]:
    """mem0's extraction prompt with the turn's date as today's and its timestamp as the observation date."""
    import mem0.memory.main as mem0_main

    real = mem0_main.generate_additive_extraction_prompt
    mem0_main.generate_additive_extraction_prompt = functools.partial(
        real, current_date=today, timestamp=timestamp)
    try:
        yield
    finally:
        mem0_main.generate_additive_extraction_prompt = real


class Mem0Full(Mem0Raw):
    """mem0 ``Memory`` with ``infer=True``: LLM-extracted facts, searched by embedding similarity."""

    def __init__(self, llm: MemoryLLM) -> None:
        """Build one ``Memory`` in a temporary directory whose LLM is ``llm`` (resets clear the store)."""
        import tempfile

        self.llm = llm
        self._tmp = tempfile.TemporaryDirectory(prefix="dimobench-mem0-")
        # mem0's own openai client is built from this, without the key: it is replaced at once and never sends
        self.memory = open_memory(self._tmp.name, {"model": llm.spec.partition("/")[2], "temperature": 0.0,
                                                   "openai_base_url": llm.base_url, "api_key": "unused"})
        self.memory.llm = Mem0LLM(llm)
        self.user_id = ""
        self.resets = 0
        self.stored = 0
        self.observed = 0

    def reset(self, persona_id: str) -> None:
        """Clear the store, switch to a fresh user id, count LLM calls afresh."""
        super().reset(persona_id)
        self.observed = 0
        self.llm.mark()

    def observe(self, turn: Any) -> None:
        """mem0 ``add(infer=True)`` of the user's utterance; the facts it stores carry the turn number."""
        text, t, ts = user_text(turn)
        if not text.strip():
            return
        self.observed += 1
        before = self.llm.ledger.failures
        with _dated(ts[:10], ts):
            res = self.memory.add(text, user_id=self.user_id, infer=True, metadata={"turn": t, "timestamp": ts})
        self.llm.check_alive("mem0", before)
        self.stored += sum(1 for r in res.get("results", []) if r.get("event") == "ADD")

    def stats(self) -> dict[str, Any]:
        """Raw items = facts stored; the persona's turns observed and LLM calls."""
        return {"raw_items": self.stored, "effective_memory": float(self.stored), "turns_observed": self.observed,
                **self.llm.counts(),
                "retrieval": f"mem0ai {version('mem0ai')} faiss, infer=True, LLM {self.llm.spec}"}
