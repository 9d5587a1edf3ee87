"""The answerer's embedding cache stays bounded on long runs and never changes a row."""

import numpy as np

from dimobench import embed
from dimobench.embed import Embedder


def test_cache_keeps_only_the_most_recent_texts_and_rows_do_not_change(monkeypatch):
    monkeypatch.setattr(embed, "CACHE_BYTES", 3 * 4 * 1024)  # three hashing rows
    e = Embedder("hashing")
    texts = [f"I walked the dog along the canal on day {i}" for i in range(6)]
    first = e.encode(texts[:2])
    e.encode(texts[2:5])
    assert len(e._cache) == 3
    assert list(e._cache) == texts[2:5]
    again = e.encode([texts[0], texts[4], texts[0]])  # evicted, cached, repeated in one call
    assert np.array_equal(again[0], first[0]) and np.array_equal(again[2], first[0])
    assert list(e._cache)[-1] == texts[0] and len(e._cache) == 3
    assert e.encode([]).shape == (0, e.dim)
