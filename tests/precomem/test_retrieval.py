"""Hybrid retrieval: BM25, topic prototype and dense terms, confidence modulation, top-K."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from precomem import PreCoMem, PreCoMemConfig
from precomem.encoders import tokenize
from precomem.lexical import BM25Index
from precomem.records import Regime, Update
from tests.helpers.precomem_texts import UNRELATED


def _scores(mem: PreCoMem, query: str) -> dict[str, float]:
    return {it.text: it.score for it in mem.recall(query, k=50)}


def test_each_signal_contributes(make_mem: Callable[..., PreCoMem]) -> None:
    texts = [*UNRELATED, "I am reading a mystery novel for my book club"]
    full = make_mem(gamma=0.0)
    for i, t in enumerate(texts, start=1):
        full.observe(t, turn=i)
    query = "which mystery novel is the book club reading"
    base = _scores(full, query)
    assert max(base, key=base.get) == texts[-1]
    for weight in ("w_dense", "w_lexical", "w_topic"):
        mem = make_mem(gamma=0.0, **{weight: 0.0})
        for i, t in enumerate(texts, start=1):
            mem.observe(t, turn=i)
        assert _scores(mem, query)[texts[-1]] < base[texts[-1]], weight


def test_confidence_modulates_and_no_confidence_ignores_it(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem(background_rate=1.0)  # every turn decays the hypothesis in full
    mem.observe("I collect vintage fountain pens", turn=1)
    s1 = mem.recall("vintage fountain pens")[0].score
    for i, t in enumerate(UNRELATED[:5], start=2):
        mem.observe(t, turn=i)  # the pen hypothesis decays meanwhile
    s2 = next(it.score for it in mem.recall("vintage fountain pens") if "pens" in it.text)
    assert s2 < s1
    flat = make_mem(no_confidence=True, w_lexical=0.0)  # BM25 statistics move as the store grows
    flat.observe("I collect vintage fountain pens", turn=1)
    f1 = flat.recall("vintage fountain pens")[0].score
    for i, t in enumerate(UNRELATED[:5], start=2):
        flat.observe(t, turn=i)
    f2 = next(it.score for it in flat.recall("vintage fountain pens") if "pens" in it.text)
    assert f2 == pytest.approx(f1)


def test_top_k_default_and_items(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem(gamma=0.0)
    for i, t in enumerate(UNRELATED + ["I bake bread on Sundays", "I run before work"], start=1):
        mem.observe(t, turn=i)
    items = mem.recall("bread")
    assert len(items) == PreCoMemConfig().top_k == 10
    assert [it.score for it in items] == sorted((it.score for it in items), reverse=True)
    it = items[0]
    assert it.kind in ("fact", "hypothesis") and 0 <= it.confidence <= 1 and it.source_turns
    assert it["text"] == it.text  # readable as a mapping too
    assert len(mem.recall("bread", k=3)) == 3


def test_bm25_incremental_matches_bulk_and_survives_removal() -> None:
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(40)]
    docs = [list(rng.choice(vocab, size=int(rng.integers(3, 12)))) for _ in range(200)]
    idx = BM25Index()
    for i, d in enumerate(docs):
        idx.add(i, d)
    q = ["w1", "w7", "w7", "w30"]
    got = idx.scores(q, len(docs))
    n = len(docs)
    avg = sum(map(len, docs)) / n
    want = np.zeros(n)
    for term in set(q):
        df = sum(term in d for d in docs)
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        for i, d in enumerate(docs):
            tf = d.count(term)
            if tf:
                want[i] += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(d) / avg))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    idx.remove(3)
    assert idx.scores(q, n).shape == (n,)


def test_compaction_keeps_ranking(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem()
    for i in range(150):
        mem.observe(f"note {i}: {UNRELATED[i % len(UNRELATED)]} {tokenize(UNRELATED[(i * 3) % 10])[0]}", turn=i + 1)
    mem.observe("I collect vintage fountain pens", turn=151)
    assert mem.store.n < 150  # pruned hypotheses were compacted away
    assert mem.recall("fountain pens")[0].text == "I collect vintage fountain pens"


def test_outcompeted_hypothesis_ranks_lower_for_the_present_only(make_mem: Callable[..., PreCoMem]) -> None:
    mem = make_mem(gamma=0.0, rival_discount=0.8)  # the precomem:rival_discount variant
    dawn = "I wake up at dawn every day and go for a run before breakfast"
    old = mem.observe(dawn, turn=1).created[0]
    winner = mem.observe("I collect vintage fountain pens", turn=2).created[0]
    now_q, past_q = "When do I wake up these days?", "When did I wake up before?"

    def score(query: str) -> float:
        return next(it.score for it in mem.recall(query, k=10) if it.id == old)

    now, past = score(now_q), score(past_q)
    row = mem.store.row_of[old]
    for t in (3, 4, 5):  # three rounds lost to a belief it is not related to (another state of its topic)
        mem._compete(winner, [old], t, Update(t, Regime.MAINTAIN, 0.0, 1.0))
    assert mem.store.rivalled[row] == 3.0
    assert [e["event"] for e in mem.snapshot()[0]["provenance"]["events"]] == ["created"]  # nothing decayed
    assert score(now_q) < now
    assert score(past_q) == pytest.approx(past)  # what held before is still there for the past
    mem.observe(dawn, turn=6)  # supported again: the lost rounds no longer count
    assert mem.store.rivalled[mem.store.row_of[old]] == 0.0
    off = make_mem(gamma=0.0)  # the default (paper) retrieval: lost rounds are counted but change nothing
    off_old = off.observe(dawn, turn=1).created[0]
    off_winner = off.observe("I collect vintage fountain pens", turn=2).created[0]
    off._compete(off_winner, [off_old], 3, Update(3, Regime.MAINTAIN, 0.0, 1.0))
    assert off.store.rivalled[off.store.row_of[off_old]] == 1.0
    assert next(it.score for it in off.recall(now_q, k=10) if it.id == off_old) == pytest.approx(now)
