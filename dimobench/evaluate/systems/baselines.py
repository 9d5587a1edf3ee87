"""Simple reference systems: no memory, append-only (hybrid or BM25), latest-wins per topic, last N turns.

Each stores only what the user says (``turn.user``): assistant replies are answers to the user, not facts
about them. None of them reads annotations or gold fields.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from dimobench.evaluate.systems.hybrid import SOURCE, HybridIndex


def _user(turn: Any) -> tuple[str, int]:
    return str(turn["user"]), int(turn["turn"])


class NoMemory:
    """Remembers nothing: the answerer sees only the question and options (the no-context leak check)."""

    def reset(self, persona_id: str) -> None:
        """Nothing to forget."""

    def observe(self, turn: Any) -> None:
        """Ignore the turn."""

    def recall(self, query: str, k: int) -> list[dict[str, object]]:
        """Always empty."""
        return []


class FullMemory:
    """Append-only: every user turn stored, retrieved with PreCoMem's hybrid scoring without confidence."""

    lexical_only = False

    def __init__(self) -> None:
        """Start empty."""
        self.index = HybridIndex(self.lexical_only)

    def reset(self, persona_id: str) -> None:
        """Drop every item."""
        self.index = HybridIndex(self.lexical_only)

    def observe(self, turn: Any) -> None:
        """Store the user's utterance."""
        text, t = _user(turn)
        if text.strip():
            self.index.add(text, t)

    def recall(self, query: str, k: int) -> list[dict[str, object]]:
        """Top-k stored turns by hybrid score."""
        return self.index.search(query, k)

    def stats(self) -> dict[str, object]:
        """Raw items = stored turns."""
        n = sum(self.index.alive)
        return {"raw_items": n, "effective_memory": float(n), "retrieval": SOURCE}


class BM25Memory(FullMemory):
    """Append-only, lexical BM25 only (items with no shared term are not returned)."""

    lexical_only = True


class RecencyMemory(FullMemory):
    """Latest-wins: one slot per topic (PreCoMem's topic prototypes); a new turn overwrites its topic's slot."""

    def __init__(self) -> None:
        """Start empty."""
        super().__init__()
        self.slots: dict[int, int] = {}

    def reset(self, persona_id: str) -> None:
        """Drop every slot."""
        super().reset(persona_id)
        self.slots = {}

    def observe(self, turn: Any) -> None:
        """Overwrite the slot of the utterance's topic."""
        text, t = _user(turn)
        if not text.strip():
            return
        topic = self.index.topic_of(text)
        if topic in self.slots:
            self.index.remove(self.slots[topic])
        self.slots[topic] = self.index.add(text, t)


class WindowMemory(FullMemory):
    """The last N user turns (``--window-n``); recall ranks them by hybrid score."""

    def __init__(self, n: int = 20) -> None:
        """Keep the last ``n`` turns."""
        super().__init__()
        self.n = n
        self.recent: deque[int] = deque()

    def reset(self, persona_id: str) -> None:
        """Empty the window."""
        super().reset(persona_id)
        self.recent = deque()

    def observe(self, turn: Any) -> None:
        """Push the turn; the oldest falls out past N."""
        text, t = _user(turn)
        if not text.strip():
            return
        self.recent.append(self.index.add(text, t))
        while len(self.recent) > self.n:
            self.index.remove(self.recent.popleft())
