"""``mem0-raw``: mem0's OSS ``Memory`` with a local FAISS store and the packaged MiniLM, no LLM.

``add(..., infer=False)`` stores each user turn verbatim (mem0's LLM fact extraction and ADD/UPDATE/DELETE
decisions need an LLM and do not run); ``search`` ranks by its scoring over FAISS cosine similarity. mem0
always builds an LLM client, so it is pointed at a closed loopback port. Telemetry is off and mem0's home is
a temporary directory. Turn numbers and timestamps go in metadata (``add(timestamp=...)`` is platform-only).
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
from importlib.metadata import version
from typing import Any

from dimobench.evaluate.systems.adapters import closed_port, minilm_path, user_text

DIMS = 384


def _mem0_home() -> None:
    """Point ``MEM0_DIR`` (read once, at mem0's import) at a process-wide temporary directory, not ``~/.mem0``."""
    if "MEM0_DIR" not in os.environ:
        home = tempfile.mkdtemp(prefix="dimobench-mem0-home-")
        atexit.register(shutil.rmtree, home, True)
        os.environ["MEM0_DIR"] = home


def _no_spacy_download() -> None:
    """mem0 lemmatizes with spaCy when it is installed and downloads ``en_core_web_sm`` when that is missing;
    mark the model as failed instead (mem0 then skips lemmas and entity links), so nothing is fetched."""
    import importlib.util

    if importlib.util.find_spec("spacy") is not None and importlib.util.find_spec("en_core_web_sm") is None:
        import mem0.utils.spacy_models as spacy_models

        spacy_models._load_failed_full = spacy_models._load_failed_lemma = True


def open_memory(root: str, llm_config: dict[str, Any]) -> Any:
    """A mem0 ``Memory`` in ``root`` (FAISS, the packaged MiniLM, telemetry off) with ``llm_config`` for its
    ``openai`` LLM provider."""
    os.environ["MEM0_TELEMETRY"] = "False"  # read at import: no posthog events, no remote notices
    _mem0_home()
    import mem0.memory.main as mem0_main
    import mem0.memory.telemetry as mem0_telemetry
    from mem0 import Memory

    # mem0 may have been imported before the variable was set; its flag is a module global
    mem0_telemetry.MEM0_TELEMETRY = mem0_main.MEM0_TELEMETRY = False
    _no_spacy_download()

    logging.getLogger("mem0").setLevel(logging.ERROR)  # "faiss has no keyword search", "resetting" ...
    return Memory.from_config({
        "embedder": {"provider": "huggingface", "config": {"model": minilm_path(), "embedding_dims": DIMS}},
        "vector_store": {"provider": "faiss", "config": {
            "path": os.path.join(root, "faiss"), "collection_name": "dimobench", "embedding_model_dims": DIMS}},
        "llm": {"provider": "openai", "config": llm_config},
        "history_db_path": os.path.join(root, "history.db"),
    })


class Mem0Raw:
    """mem0 ``Memory`` storing raw user turns (``infer=False``), retrieved by embedding similarity."""

    def __init__(self) -> None:
        """Build one ``Memory`` in a temporary directory (the embedder loads once; resets clear the store)."""
        self._tmp = tempfile.TemporaryDirectory(prefix="dimobench-mem0-")
        self.memory = open_memory(self._tmp.name, {
            "api_key": "unused", "openai_base_url": f"http://127.0.0.1:{closed_port()}/v1"})
        self.user_id = ""
        self.resets = 0
        self.stored = 0

    def reset(self, persona_id: str) -> None:
        """Clear the store and switch to a fresh user id (FAISS filters after the top-k, so other personas'
        turns would crowd a shared index; ``delete_all`` is slow, one call per item)."""
        if self.stored:
            self.memory.reset()
        self.resets += 1
        self.user_id = f"{persona_id}#{self.resets}"
        self.stored = 0

    def observe(self, turn: Any) -> None:
        """Store the user's utterance verbatim."""
        text, t, ts = user_text(turn)
        if text.strip():
            self.memory.add(text, user_id=self.user_id, infer=False, metadata={"turn": t, "timestamp": ts})
            self.stored += 1

    def recall(self, query: str, k: int) -> list[dict[str, Any]]:
        """mem0 ``search`` over this persona's memories, threshold 0 (the answerer sees the top k)."""
        if not self.stored:
            return []
        res = self.memory.search(query, top_k=k, filters={"user_id": self.user_id}, threshold=0.0)
        out = []
        for r in res.get("results", []):
            turn = (r.get("metadata") or {}).get("turn")
            out.append({"text": r["memory"], "score": float(r.get("score") or 0.0),
                        "source_turns": [int(turn)] if isinstance(turn, (int, float)) else []})
        return out

    def stats(self) -> dict[str, Any]:
        """Raw items = stored turns."""
        return {"raw_items": self.stored, "effective_memory": float(self.stored),
                "retrieval": f"mem0ai {version('mem0ai')} faiss, infer=False"}
