"""Belief store: editable facts and hypotheses kept in preallocated, growing numpy columns.

Rows are append-only until compaction; pruned rows are masked (``alive``) and compacted away in bulk, so
retrieval stays a handful of vector operations over the whole store whatever its size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from precomem.lexical import BM25Index

KINDS = ("hypothesis", "fact")
HALF_PRECISION_ROWS = 20_000
"""Stores at least this large score dense similarity on a float16 mirror (when torch is installed)."""


_TORCH: list[Any] = []


def _torch() -> Any:
    """torch, imported on first need, or None where it is not installed: whether the float16 mirror is used must
    not depend on what else this process happened to import first."""
    if not _TORCH:
        try:
            import torch
        except ImportError:
            _TORCH.append(None)
        else:
            _TORCH.append(torch)
    return _TORCH[0]


@dataclass
class BeliefMeta:
    """Per-belief fields that are not scored in bulk."""

    id: str
    """Stable id, ``b<number>``."""
    text: str
    """The proposition, in the observation's own words."""
    cls: str
    """Extractor class: statement, event, request, other, past (or fact for CORRECT writes)."""
    about: str
    """Who it is about and when: ``user`` (now), ``other`` (someone else) or ``past`` (the user's past)."""
    tokens: list[str]
    """Lexical tokens (kept so compaction can rebuild BM25 without re-tokenising)."""
    source_turns: list[int] = field(default_factory=list)
    """Episodic turns that created or supported the belief."""
    history: list[dict[str, Any]] = field(default_factory=list)
    """Provenance events: created/supported/promoted/decayed, with turn, regime and confidence."""


class BeliefStore:
    """Columns for bulk scoring plus a list of :class:`BeliefMeta`."""

    def __init__(self, dim: int, k1: float = 1.2, b: float = 0.75, capacity: int = 256) -> None:
        """Allocate an empty store of embedding width ``dim``."""
        self.dim = dim
        self.n = 0
        self.emb = np.zeros((capacity, dim), dtype=np.float32)
        self.conf = np.zeros(capacity, dtype=np.float64)
        self.last = np.zeros(capacity, dtype=np.int64)
        self.extra = np.zeros(capacity, dtype=np.float64)
        self.background = 1.0
        """Decay steps an unrelated turn costs (the engine sets ``config.background_rate``; 1.0 = every turn
        counts in full, the paper's plain clock)."""
        self.created = np.zeros(capacity, dtype=np.int64)
        self.fact = np.zeros(capacity, dtype=bool)
        self.protected = np.zeros(capacity, dtype=bool)
        self.deprecated = np.zeros(capacity, dtype=bool)
        self.rivalled = np.zeros(capacity, dtype=np.float64)
        """Rival cues a hypothesis lost since its last support: observations on its topic that matched another
        state of the topic better (see ``PreCoMemConfig.rival_discount``)."""
        self.alive = np.zeros(capacity, dtype=bool)
        self.user = np.zeros(capacity, dtype=bool)
        self.topic = np.zeros(capacity, dtype=np.int16)
        self.meta: list[BeliefMeta] = []
        self.row_of: dict[str, int] = {}
        self.bm25 = BM25Index(k1, b)
        self._k1, self._b = k1, b
        self.next_id = 1
        self._half: Any = None  # float16 torch mirror of emb rows [0, _half_rows) for large stores
        self._half_rows = 0

    # --- columns ---
    def _grow(self) -> None:
        cap = 2 * len(self.conf)
        self.emb = np.concatenate([self.emb, np.zeros_like(self.emb)])[:cap]
        for name in ("conf", "last", "extra", "created", "fact", "protected", "deprecated", "rivalled", "alive", "user",
                     "topic"):
            col = getattr(self, name)
            setattr(self, name, np.concatenate([col, np.zeros_like(col)]))

    def add(
        self,
        meta: BeliefMeta,
        emb: np.ndarray,
        conf: float,
        turn: int,
        *,
        fact: bool,
        protected: bool,
        topic: int,
    ) -> int:
        """Append a belief and return its row."""
        if self.n == len(self.conf):
            self._grow()
        r = self.n
        self.emb[r] = emb
        self.conf[r], self.last[r], self.created[r] = conf, turn, turn
        self.extra[r], self.rivalled[r] = 0.0, 0.0
        self.fact[r], self.protected[r], self.deprecated[r] = fact, protected, False
        self.alive[r], self.user[r], self.topic[r] = True, meta.about == "user", topic
        self.meta.append(meta)
        self.row_of[meta.id] = r
        self.bm25.add(r, meta.tokens)
        self.n += 1
        return r

    def new_id(self) -> str:
        """Next belief id."""
        bid = f"b{self.next_id}"
        self.next_id += 1
        return bid

    def age(self, turn: int) -> np.ndarray:
        """Unsupported turns since the last support: ``background * (turn - last) + extra``.

        ``extra`` holds the steps charged by related evidence that did not support the belief (a full step
        each, less any partial support), so with ``background = 1`` this is the plain turn clock.
        """
        n = self.n
        return self.background * np.maximum(turn - self.last[:n], 0) + self.extra[:n]

    def age_row(self, row: int, turn: int) -> float:
        """:meth:`age` of one row."""
        return self.background * max(turn - int(self.last[row]), 0) + float(self.extra[row])

    def effective(self, turn: int, gamma: float) -> np.ndarray:
        """Confidence at ``turn``: unsupported, unprotected hypotheses lose gamma per unsupported turn
        (:meth:`age`)."""
        n = self.n
        decaying = ~self.fact[:n] & ~self.protected[:n]
        conf = np.where(decaying, self.conf[:n] - gamma * self.age(turn), self.conf[:n])
        return np.clip(np.where(self.alive[:n], conf, 0.0), 0.0, 1.0)

    def effective_row(self, row: int, turn: int, gamma: float) -> float:
        """Confidence of one row at ``turn`` (O(1) twin of :meth:`effective`)."""
        if not self.alive[row]:
            return 0.0
        w = float(self.conf[row])
        if not self.fact[row] and not self.protected[row]:
            w -= gamma * self.age_row(row, turn)
        return min(max(w, 0.0), 1.0)

    def remove(self, rows: np.ndarray) -> list[str]:
        """Mark rows dead (pruned); return their ids."""
        ids = []
        for r in rows.tolist():
            if self.alive[r]:
                self.alive[r] = False
                self.bm25.remove(r)
                ids.append(self.meta[r].id)
        return ids

    def maybe_compact(self) -> None:
        """Drop dead rows once they are a quarter of the store, rebuilding the lexical index."""
        dead = self.n - int(self.alive[: self.n].sum())
        if dead < max(64, self.n // 4):
            return
        keep = np.flatnonzero(self.alive[: self.n])
        m = len(keep)
        self.emb[:m] = self.emb[keep]
        for name in ("conf", "last", "extra", "created", "fact", "protected", "deprecated", "rivalled", "alive", "user",
                     "topic"):
            col = getattr(self, name)
            col[:m] = col[keep]
            col[m : self.n] = 0
        self.meta = [self.meta[r] for r in keep.tolist()]
        self.row_of = {mt.id: i for i, mt in enumerate(self.meta)}
        self.n = m
        self._half, self._half_rows = None, 0
        self.bm25 = BM25Index(self._k1, self._b)
        for i, mt in enumerate(self.meta):
            self.bm25.add(i, mt.tokens)

    def dense(self, q: np.ndarray) -> np.ndarray:
        """Cosine of every row with the unit query ``q``.

        The product reads the whole matrix, so it is memory bound: above ``HALF_PRECISION_ROWS`` rows, and when
        torch is installed, a float16 mirror halves the bytes read (100k x 384:
        ~5 ms instead of ~11 ms on 2 cores). Rows only ever append, so the mirror grows incrementally; the
        float32 matrix stays the source of truth (state, evidence, NLI features).
        """
        n = self.n
        if n < HALF_PRECISION_ROWS:
            return self.emb[:n] @ q
        torch = _torch()
        if torch is None:
            return self.emb[:n] @ q
        if self._half is None or self._half.shape[0] < n:
            cap = len(self.conf)
            grown = torch.zeros((cap, self.dim), dtype=torch.float16)
            if self._half is not None:
                grown[: self._half_rows] = self._half[: self._half_rows]
            self._half = grown
        if self._half_rows < n:
            self._half[self._half_rows : n] = torch.from_numpy(self.emb[self._half_rows : n]).to(torch.float16)
            self._half_rows = n
        before = torch.get_num_threads()
        torch.set_num_threads(1)  # the single-thread fp16 kernel is the fastest measured on a shared 2-core box
        try:
            out = self._half[:n] @ torch.from_numpy(q.astype(np.float32)).to(torch.float16)
            return out.to(torch.float32).numpy()  # inside: a multi-threaded cast alone costs ~8 ms
        finally:
            torch.set_num_threads(before)

    def live_rows(self) -> np.ndarray:
        """Rows of beliefs that are not pruned."""
        return np.flatnonzero(self.alive[: self.n])
