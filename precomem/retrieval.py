"""Hybrid retrieval: a confidence-modulated mix of dense cosine, saturated BM25 and topic-prototype match.

Everything is a vector operation over the store's columns, so ranking 100k beliefs costs about one
matrix-vector product plus the postings of the query's terms.
"""

from __future__ import annotations

import numpy as np

from precomem import topics
from precomem.beliefs import BeliefStore
from precomem.config import PreCoMemConfig
from precomem.records import RecallItem


def hybrid_scores(
    store: BeliefStore,
    q_emb: np.ndarray,
    q_tokens: list[str],
    topic_p: np.ndarray,
    conf: np.ndarray,
    cfg: PreCoMemConfig,
) -> np.ndarray:
    """Score every row: ``(w_d * cos+ + w_l * bm25/(bm25+half) + w_t * p(topic)) * (floor + (1-floor) * w)``.

    Dead rows get ``-inf``. BM25 is saturated with a fixed scale rather than divided by the query's maximum,
    so a barely matching best item is not promoted to a full lexical score.
    """
    n = store.n
    if n == 0:
        return np.zeros(0, dtype=np.float32)
    mix = store.dense(q_emb)
    np.maximum(mix, 0.0, out=mix)
    mix *= cfg.w_dense
    if q_tokens:
        lex = store.bm25.scores(q_tokens, n)
        mix += cfg.w_lexical * lex / (lex + cfg.bm25_half)
    mix += cfg.w_topic * topic_p[store.topic[:n]]
    if not cfg.no_confidence:
        mix *= (cfg.confidence_floor + (1.0 - cfg.confidence_floor) * conf).astype(np.float32)
    mix[~store.alive[:n]] = -np.inf
    return mix


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Rows of the k best finite scores, best first (ties broken by row, i.e. older first)."""
    finite = int(np.isfinite(scores).sum())
    k = min(k, finite)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k < len(scores):
        idx = np.argpartition(-scores, k - 1)[:k]
    else:
        idx = np.arange(len(scores))
    order = np.lexsort((idx, -scores[idx]))
    return idx[order][:k]


def read_confidence(
    store: BeliefStore, conf: np.ndarray, config: PreCoMemConfig, past: bool, turn: int
) -> np.ndarray:
    """The confidences a query ranks with: read time only, the beliefs themselves never change.

    ``past`` (the query asks about an earlier time): deprecated facts compete at ``past_query_confidence``
    instead of their decayed confidence, since such a question asks for exactly the beliefs that were revised.
    Otherwise hypotheses that another state of their topic has outcompeted since their last support rank lower,
    by ``rival_discount`` per lost round, and protected events by their age (``event_half_life``); ``turn`` is
    the memory's current turn.
    """
    n = store.n
    if past and config.past_query_confidence is not None:
        dep = store.deprecated[:n] & store.alive[:n]
        if dep.any():
            conf = np.where(dep, np.maximum(conf, config.past_query_confidence), conf)
    elif not past:
        if config.rival_discount is not None:
            lost = store.rivalled[:n]
            if lost.any():  # usually none: skip the per-row work on recall's hot path
                conf = conf * np.power(config.rival_discount, np.where(store.fact[:n], 0.0, lost))
        if config.event_half_life is not None:
            events = store.protected[:n] & ~store.fact[:n]
            if events.any():  # recall's hot path: no per-row work for a store without occasions
                conf = np.where(events, conf * np.exp2(-store.age(turn) / config.event_half_life), conf)
    return conf


def recall_items(store: BeliefStore, rows: np.ndarray, conf: np.ndarray, scores: np.ndarray) -> list[RecallItem]:
    """The ranked rows as :class:`RecallItem` records, best first."""
    return [
        RecallItem(
            store.meta[r].id,
            store.meta[r].text,
            "fact" if store.fact[r] else "hypothesis",
            float(conf[r]),
            float(scores[r]),
            list(store.meta[r].source_turns),
            topics.TOPICS[store.topic[r]],
            bool(store.deprecated[r]),
        )
        for r in rows.tolist()
    ]
