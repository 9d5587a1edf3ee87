"""An append-only index scored like PreCoMem's retrieval, without confidence: the engine behind the baselines.

``score = w_dense * max(cos, 0) + w_lexical * bm25 / (bm25 + half) + w_topic * p(topic of item | query)``
with PreCoMem's default weights, its BM25 index, tokenizer and topic prototypes (imported from ``precomem``
when it is installed; small local stand-ins otherwise, recorded as ``retrieval: local``).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from dimobench.embed import Embedder, get_embedder

try:
    from precomem.config import PreCoMemConfig
    from precomem.encoders import tokenize
    from precomem.lexical import BM25Index
    from precomem.topics import PROTOTYPES

    _CFG = PreCoMemConfig()
    WEIGHTS = (_CFG.w_dense, _CFG.w_lexical, _CFG.w_topic, _CFG.bm25_half, _CFG.topic_temperature)
    SOURCE = "precomem"
except ImportError:  # pragma: no cover - precomem ships with dimobench; kept for a stripped install
    from dimobench.embed import tokenize

    PROTOTYPES = {}
    WEIGHTS = (0.5, 0.3, 0.2, 4.0, 0.05)
    SOURCE = "local"

    class BM25Index:  # type: ignore[no-redef]
        """Minimal Okapi BM25 (k1 = 1.2, b = 0.75) with add and remove."""

        def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
            self.k1, self.b, self.docs = k1, b, {}  # type: ignore[var-annotated]

        def add(self, doc: int, tokens: list[str]) -> None:
            """Index ``doc`` by its term counts (replacing any earlier entry for it)."""
            self.docs[doc] = Counter(tokens)

        def remove(self, doc: int) -> None:
            """Drop ``doc`` from the index; unknown ids are ignored."""
            self.docs.pop(doc, None)

        def scores(self, query: list[str], n_docs: int) -> np.ndarray:
            """BM25 score of every doc id ``0..n_docs-1`` for ``query`` (0 for ids not indexed)."""
            out = np.zeros(n_docs, dtype=np.float32)
            if not self.docs:
                return out
            avg = max(sum(sum(c.values()) for c in self.docs.values()) / len(self.docs), 1.0)
            for term in dict.fromkeys(query):  # not a set: float sums in a hash-seeded order differ per process
                df = sum(1 for c in self.docs.values() if term in c)
                idf = math.log1p((len(self.docs) - df + 0.5) / (df + 0.5))
                for d, c in self.docs.items():
                    tf = c.get(term, 0)
                    if tf and d < n_docs:
                        norm = self.k1 * (1 - self.b + self.b * sum(c.values()) / avg)
                        out[d] += idf * tf * (self.k1 + 1) / (tf + norm)
            return out


class TopicModel:
    """Nearest life-topic prototype for items, softmax over topics for queries (PreCoMem's prototypes)."""

    def __init__(self, embedder: Embedder) -> None:
        """Embed the prototypes once."""
        self.embedder = embedder
        self.related = 0.30 if embedder.backend == "minilm" else 0.15
        rows = []
        for group in PROTOTYPES.values():
            v = embedder.encode(list(group)).mean(axis=0)
            rows.append(v / max(float(np.linalg.norm(v)), 1e-9))
        self.matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), embedder.dim)

    def assign(self, emb: np.ndarray) -> int:
        """Topic index of one item; ``len(prototypes)`` (general) when none is related."""
        if not len(self.matrix):
            return 0
        sims = self.matrix @ emb
        return int(sims.argmax()) if float(sims.max()) >= self.related else len(self.matrix)

    def distribution(self, q: np.ndarray, temperature: float) -> np.ndarray:
        """p(topic | query) with ``general`` at probability 0."""
        if not len(self.matrix):
            return np.ones(1, dtype=np.float32)
        s = self.matrix @ q / temperature
        p = np.exp(s - s.max())
        return np.append(p / p.sum(), 0.0).astype(np.float32)


class HybridIndex:
    """Items (text, source turn) with add/remove and hybrid or lexical-only top-k search."""

    def __init__(self, lexical_only: bool = False, embedder: Embedder | None = None) -> None:
        """Create an empty index; ``lexical_only`` scores by raw BM25 alone."""
        self.lexical_only = lexical_only
        self.embedder = embedder or get_embedder()
        self.texts: list[str] = []
        self.turns: list[int] = []
        self.alive: list[bool] = []
        self.topics: list[int] = []
        self._emb: list[np.ndarray] = []
        self.bm25 = BM25Index()
        self._topic_model: TopicModel | None = None

    @property
    def topic_model(self) -> TopicModel:
        """Prototype topics, built on first use."""
        if self._topic_model is None:
            self._topic_model = TopicModel(self.embedder)
        return self._topic_model

    def add(self, text: str, turn: int) -> int:
        """Append an item; returns its id."""
        doc = len(self.texts)
        self.texts.append(text)
        self.turns.append(turn)
        self.alive.append(True)
        self.bm25.add(doc, tokenize(text))
        return doc

    def remove(self, doc: int) -> None:
        """Mark an item dead (recency overwrite)."""
        if self.alive[doc]:
            self.alive[doc] = False
            self.bm25.remove(doc)

    def _ensure_embedded(self) -> None:
        pending = self.texts[len(self._emb):]
        if pending:
            emb = self.embedder.encode(pending)
            self._emb.extend(emb)
            self.topics.extend(self.topic_model.assign(e) for e in emb)

    def topic_of(self, text: str) -> int:
        """Topic index of a text."""
        return self.topic_model.assign(self.embedder.encode([text])[0])

    def search(self, query: str, k: int) -> list[dict[str, object]]:
        """Top-k live items, best first: ``{text, score, source_turns}``."""
        n = len(self.texts)
        if n == 0 or k <= 0:
            return []
        w_dense, w_lex, w_topic, half, temp = WEIGHTS
        lex = self.bm25.scores(tokenize(query), n).astype(np.float64)
        if self.lexical_only:
            scores = lex
        else:
            self._ensure_embedded()
            q = self.embedder.encode([query])[0]
            dense = np.maximum(np.stack(self._emb) @ q, 0.0)
            p = self.topic_model.distribution(q, temp)
            scores = w_dense * dense + w_lex * lex / (lex + half) + w_topic * p[np.asarray(self.topics)]
        scores = np.where(np.asarray(self.alive), scores, -np.inf)
        if self.lexical_only:
            scores = np.where(lex > 0, scores, -np.inf)
        live = int(np.isfinite(scores).sum())
        order = np.lexsort((-np.arange(n), -scores))[: min(k, live)]
        return [{"text": self.texts[i], "score": round(float(scores[i]), 6), "source_turns": [self.turns[i]]}
                for i in order]
