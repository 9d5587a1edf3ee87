"""``amem-raw``: A-Mem's ``AgenticMemorySystem`` (ChromaDB + MiniLM) with no LLM reachable.

A-Mem asks its LLM for keywords, context and tags of each note and whether to evolve its neighbours; here the
LLM backend points at a closed loopback port, each call is refused at once and A-Mem falls back to empty
metadata, so notes are the raw user turns (plus the empty ``context:`` suffix A-Mem appends) ranked by
ChromaDB cosine distance. A-Mem prints each refused call on stdout; that is swallowed. Each persona gets a
fresh storage directory.
"""

from __future__ import annotations

import os
import re
import tempfile
from importlib.metadata import version
from typing import Any

from dimobench.evaluate.systems.adapters import closed_port, minilm_path, quiet, user_text

_DIGITS = re.compile(r"\d")


def _amem_time(timestamp: str) -> str:
    """ISO ``2024-04-21T08:51:06`` -> A-Mem's ``YYYYMMDDHHMM``."""
    return "".join(_DIGITS.findall(timestamp))[:12]


class AMemRaw:
    """A-Mem notes from raw user turns, searched by cosine similarity (``1 - distance``)."""

    def __init__(self) -> None:
        """Import A-Mem with LiteLLM's local cost map and Chroma telemetry off; nothing is built until reset."""
        os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # else LiteLLM fetches its price list at import
        os.environ["ANONYMIZED_TELEMETRY"] = "False"  # ChromaDB's product telemetry
        with quiet():
            from agentic_memory.memory_system import AgenticMemorySystem

        self._cls = AgenticMemorySystem
        self._tmp = tempfile.TemporaryDirectory(prefix="dimobench-amem-")
        self._model = minilm_path()
        self._port = closed_port()
        self.resets = 0
        self.system: Any = None
        self.turn_of: dict[str, int] = {}

    def reset(self, persona_id: str) -> None:
        """A new ``AgenticMemorySystem`` on a fresh storage directory."""
        self.resets += 1
        path = os.path.join(self._tmp.name, f"{self.resets:04d}")
        with quiet():
            self.system = self._cls(model_name=self._model, storage_path=path, llm_backend="sglang",
                                    sglang_host="http://127.0.0.1", sglang_port=self._port)
        self.turn_of = {}

    def observe(self, turn: Any) -> None:
        """Add a note with the user's utterance and the turn's time."""
        text, t, ts = user_text(turn)
        if not text.strip():
            return
        with quiet():
            note_id = self.system.add_note(text, time=_amem_time(ts))
        self.turn_of[note_id] = t

    def recall(self, query: str, k: int) -> list[dict[str, Any]]:
        """A-Mem ``search`` (ids and cosine distances), each note read back; score ``1 - distance``."""
        if not self.turn_of:
            return []
        out = []
        with quiet():
            for hit in self.system.search(query, k=k):
                note = self.system.read(hit["id"])
                if note is None:
                    continue
                turn = self.turn_of.get(hit["id"])
                out.append({"text": self._text(note), "score": 1.0 - float(hit["score"]),
                            "source_turns": [turn] if turn else []})
        return out

    def _text(self, note: Any) -> str:
        """What recall returns of a note: its content (the raw user turn)."""
        return str(note.content)

    def stats(self) -> dict[str, Any]:
        """Raw items = stored notes."""
        n = len(self.turn_of)
        return {"raw_items": n, "effective_memory": float(n),
                "retrieval": f"a-mem {version('a-mem')} chromadb, no LLM"}
