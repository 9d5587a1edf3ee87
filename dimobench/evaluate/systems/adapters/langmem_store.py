"""``langmem-store``: LangMem's memory tools over a LangGraph ``InMemoryStore`` indexed with MiniLM, no LLM.

Each user turn is written with ``create_manage_memory_tool`` (action ``create``) and recalled with
``create_search_memory_tool``, both bound to the store and a per-persona namespace. LangMem's memory
manager, which decides what to extract, update or delete, needs an LLM and does not run.
"""

from __future__ import annotations

import re
from importlib.metadata import version
from typing import Any

from dimobench.evaluate.systems.adapters import minilm_path, user_text

DIMS = 384
_CREATED = re.compile(r"created memory (\S+)")


class LangMemStore:
    """LangMem manage/search tools on an ``InMemoryStore`` (fresh store per persona)."""

    def __init__(self) -> None:
        """Load the MiniLM embedder (shared with the answerer when the same model is already loaded)."""
        from dimobench.embed import load_model

        self._model = load_model(minilm_path())
        self._fresh("none")

    def _embed(self, texts: list[str]) -> list[list[float]]:
        emb = self._model.encode(list(texts), batch_size=64, normalize_embeddings=True,  # type: ignore[attr-defined]
                                 convert_to_numpy=True, show_progress_bar=False)
        return [row.tolist() for row in emb]

    def _fresh(self, persona_id: str) -> None:
        from langgraph.store.memory import InMemoryStore
        from langmem import create_manage_memory_tool, create_search_memory_tool

        self.store = InMemoryStore(index={"dims": DIMS, "fields": ["content"], "embed": self._embed})
        namespace = ("dimobench", persona_id)
        self.manage = create_manage_memory_tool(namespace, store=self.store, actions_permitted=("create",))
        self.search = create_search_memory_tool(namespace, store=self.store, response_format="content_and_artifact")
        self.turn_of: dict[str, int] = {}

    def reset(self, persona_id: str) -> None:
        """A new store and namespace for the persona."""
        self._fresh(persona_id)

    def observe(self, turn: Any) -> None:
        """Create one memory holding the user's utterance."""
        text, t, _ = user_text(turn)
        if not text.strip():
            return
        reply = str(self.manage.invoke({"content": text, "action": "create"}))
        m = _CREATED.search(reply)
        if m:
            self.turn_of[m.group(1)] = t

    def recall(self, query: str, k: int) -> list[dict[str, Any]]:
        """The search tool's top k (cosine similarity from the store's index)."""
        if not self.turn_of:
            return []
        msg = self.search.invoke({"type": "tool_call", "id": "recall", "name": self.search.name,
                                  "args": {"query": query, "limit": k}})
        out = []
        for item in msg.artifact or []:
            content = item.value.get("content")
            turn = self.turn_of.get(item.key)
            out.append({"text": content if isinstance(content, str) else str(content),
                        "score": float(item.score or 0.0), "source_turns": [turn] if turn else []})
        return out

    def stats(self) -> dict[str, Any]:
        """Raw items = stored turns."""
        n = len(self.turn_of)
        return {"raw_items": n, "effective_memory": float(n),
                "retrieval": f"langmem {version('langmem')} InMemoryStore, no manager"}
