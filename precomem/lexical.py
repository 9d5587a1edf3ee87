"""Incremental BM25 over beliefs: an inverted index of growable numpy postings, scored without a Python loop
over beliefs (one vectorised update per query term)."""

from __future__ import annotations

from collections import Counter

import numpy as np


class _Posting:
    """Growable (doc id, term frequency) arrays for one term."""

    __slots__ = ("ids", "tfs", "size")

    def __init__(self) -> None:
        self.ids = np.empty(4, dtype=np.int64)
        self.tfs = np.empty(4, dtype=np.float32)
        self.size = 0

    def append(self, doc: int, tf: int) -> None:
        if self.size == len(self.ids):
            self.ids = np.resize(self.ids, 2 * self.size)
            self.tfs = np.resize(self.tfs, 2 * self.size)
        self.ids[self.size] = doc
        self.tfs[self.size] = tf
        self.size += 1


class BM25Index:
    """Okapi BM25 with add and remove; removed documents keep their postings but leave the statistics."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        """Create an empty index."""
        self.k1, self.b = k1, b
        self._post: dict[str, _Posting] = {}
        self._df: Counter[str] = Counter()
        self._len = np.zeros(64, dtype=np.float32)
        self._terms: dict[int, list[str]] = {}
        self._n_live = 0
        self._total_len = 0.0

    def add(self, doc: int, tokens: list[str]) -> None:
        """Index document ``doc`` (ids grow from 0; a gap is allowed)."""
        if doc >= len(self._len):
            self._len = np.resize(self._len, max(2 * len(self._len), doc + 1))
        counts = Counter(tokens)
        for term, tf in counts.items():
            self._post.setdefault(term, _Posting()).append(doc, tf)
            self._df[term] += 1
        self._len[doc] = len(tokens)
        self._terms[doc] = list(counts)
        self._n_live += 1
        self._total_len += len(tokens)

    def remove(self, doc: int) -> None:
        """Drop ``doc`` from document frequencies and lengths; the caller masks its stale postings."""
        terms = self._terms.pop(doc, None)
        if terms is None:
            return
        for term in terms:
            self._df[term] -= 1
        self._n_live -= 1
        self._total_len -= float(self._len[doc])

    def scores(self, query: list[str], n_docs: int) -> np.ndarray:
        """BM25 score of every document id below ``n_docs`` for the query tokens."""
        out = np.zeros(n_docs, dtype=np.float32)
        if self._n_live == 0:
            return out
        avgdl = max(self._total_len / self._n_live, 1.0)
        norm = self.k1 * (1.0 - self.b + self.b * self._len[:n_docs] / avgdl)
        for term in dict.fromkeys(query):  # not a set: float sums in a hash-seeded order differ per process
            post = self._post.get(term)
            df = self._df.get(term, 0)
            if post is None or df <= 0:
                continue
            idf = np.log1p((self._n_live - df + 0.5) / (df + 0.5))
            ids, tfs = post.ids[: post.size], post.tfs[: post.size]
            keep = ids < n_docs
            if not keep.all():
                ids, tfs = ids[keep], tfs[keep]
            # Each id occurs once per term, so fancy-index += is safe.
            out[ids] += idf * tfs * (self.k1 + 1.0) / (tfs + norm[ids])
        return out
