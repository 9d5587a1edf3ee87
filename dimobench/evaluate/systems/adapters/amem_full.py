"""``amem``: A-Mem's ``AgenticMemorySystem`` with its LLM memory policy on.

For each user turn A-Mem asks its LLM for the note's keywords, context and tags, then (from the second note
on) whether to evolve it against its nearest neighbours: link it (``strengthen``) or rewrite the neighbours'
context and tags (``update_neighbor``). ChromaDB embeds each note with the packaged MiniLM as A-Mem builds it
(content plus context, keywords and tags), and recall returns that same text, so what the LLM wrote, evolutions
included, is what the answerer sees. Notes get ids from the turn number (``t12``), which keeps A-Mem's
evolution prompts, and so the reply cache, the same from run to run.

A-Mem's LLM controller is replaced by a facade over dimobench's backend (:mod:`.memory_llm`): the JSON schema
A-Mem sends becomes the request's response model, at temperature 0 (A-Mem's default is 1.0) with seed 0. A-Mem
falls back to empty metadata when a call fails; the adapter fails instead when no call has ever succeeded.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from dimobench.evaluate.systems.adapters import quiet, user_text
from dimobench.evaluate.systems.adapters.amem_raw import AMemRaw, _amem_time
from dimobench.evaluate.systems.adapters.memory_llm import MemoryLLM, model_from_schema

MAX_TOKENS = 1000
"""A-Mem's own limit (``max_new_tokens`` of its SGLang controller)."""
SYSTEM_PROMPT = "You must respond with a JSON object."
"""A-Mem's system message (its OpenAI controller's)."""


class AMemLLM:
    """A-Mem's controller interface (``get_completion(prompt, response_format, temperature)``) over
    :class:`MemoryLLM`."""

    def __init__(self, llm: MemoryLLM) -> None:
        """Wrap ``llm``."""
        self.llm = llm

    def get_completion(self, prompt: str, response_format: dict[str, Any] | None = None,
                       temperature: float = 1.0) -> str:
        """The reply's JSON text for A-Mem's ``json_schema`` response format (temperature is fixed at 0)."""
        spec = (response_format or {}).get("json_schema") or {}
        model = model_from_schema(spec.get("schema") or {"type": "object", "properties": {}})
        item = "amem/" + ("evolve" if "should_evolve" in model.model_fields else "analyze")
        return self.llm.complete([{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}],
                                 model, MAX_TOKENS, item)


def note_text(note: Any) -> str:
    """A note as A-Mem embeds it (``ChromaRetriever.add_document``): content, then context, keywords and tags."""
    text = str(note.content)
    if note.context and note.context != "General":
        text += f" context: {note.context}"
    if note.keywords:
        text += f" keywords: {', '.join(map(str, note.keywords))}"
    if note.tags:
        text += f" tags: {', '.join(map(str, note.tags))}"
    return text


class AMemFull(AMemRaw):
    """A-Mem notes with LLM keywords, context, tags and evolution, searched by cosine similarity."""

    def __init__(self, llm: MemoryLLM) -> None:
        """Import A-Mem (see :class:`AMemRaw`); ``llm`` answers every call A-Mem makes."""
        self.llm = llm
        super().__init__()

    def reset(self, persona_id: str) -> None:
        """A new ``AgenticMemorySystem`` on a fresh directory, its controller bridged to ``llm``."""
        super().reset(persona_id)
        self.system.llm_controller.llm = AMemLLM(self.llm)
        self.llm.mark()

    def observe(self, turn: Any) -> None:
        """``add_note``: A-Mem's analysis and evolution calls, then the note goes to ChromaDB."""
        text, t, ts = user_text(turn)
        if not text.strip():
            return
        before = self.llm.ledger.failures
        with quiet():  # A-Mem prints failed calls
            note_id = self.system.add_note(text, time=_amem_time(ts), id=f"t{t}")
        self.llm.check_alive("amem", before)
        self.turn_of[note_id] = t

    def _text(self, note: Any) -> str:
        return note_text(note)

    def stats(self) -> dict[str, Any]:
        """Raw items = notes; evolutions A-Mem reported; LLM calls of this persona."""
        n = len(self.turn_of)
        return {"raw_items": n, "effective_memory": float(n), "evolutions": int(getattr(self.system, "evo_cnt", 0)),
                **self.llm.counts(), "retrieval": f"a-mem {version('a-mem')} chromadb, LLM {self.llm.spec}"}
