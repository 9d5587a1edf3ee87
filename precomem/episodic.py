"""Episodic cache: immutable observed turns that beliefs point to by turn number."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Episode:
    """One observed turn, never edited."""

    turn: int
    text: str
    timestamp: str | None = None


class EpisodicCache:
    """Append-only list of episodes with lookup by turn (a turn may hold several observations)."""

    def __init__(self) -> None:
        """Start empty."""
        self._items: list[Episode] = []
        self._by_turn: dict[int, list[int]] = {}

    def add(self, turn: int, text: str, timestamp: str | None = None) -> None:
        """Append an observation."""
        self._by_turn.setdefault(turn, []).append(len(self._items))
        self._items.append(Episode(turn, text, timestamp))

    def get(self, turn: int) -> list[Episode]:
        """Observations recorded at ``turn``."""
        return [self._items[i] for i in self._by_turn.get(turn, [])]

    def __len__(self) -> int:
        return len(self._items)

    def to_list(self) -> list[dict[str, Any]]:
        """Plain-JSON form."""
        return [asdict(e) for e in self._items]

    @classmethod
    def from_list(cls, items: list[dict[str, Any]]) -> EpisodicCache:
        """Inverse of :meth:`to_list`."""
        cache = cls()
        for it in items:
            cache.add(int(it["turn"]), it["text"], it.get("timestamp"))
        return cache
