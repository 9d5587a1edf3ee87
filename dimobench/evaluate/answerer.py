"""The shared offline answerer: picks the option best supported by the recalled items.

Every system is answered by the same answerer with the same k (parity, DESIGN.md section 8), unless a system
offers its own ``answer(question, options)``. The answerer never looks at an option's position or length:

* the match of option ``o`` and item ``i`` is ``m(o, i) = mix * max_c s(o, c) + (1 - mix) * mean_c s(o, c)``
  over the clauses ``c`` of ``i`` (split at ``; . ! ?``), with ``s(o, c) = cos(o, c) + lam * overlap(o, c)``
  and overlap the cosine of the content-word sets (crude stems; MiniLM alone confuses antonyms such as "past
  midnight" and "early mornings"). Neither extreme works. The max alone lets one clause that shares a word
  with a wrong option ("ate breakfast at noon after a late night" against "early breakfasts") outvote the
  rest of the item. The mean alone drowns the one clause that names the option ("took Zoom calls at the
  kitchen table" for "Slack and Zoom calls with a scattered team") among four others, so that "works remotely
  from a spare room" matched "an open-plan office" as well as the right option (with the same oracle recall,
  v3, the mean: oracle 0.939 on a 700-turn suite; v4, mix 0.5: 0.952, and 0.1-1.3 points higher on all five
  preset seeds);
* each item gets a weight ``w_i = s_i * r_i * q_i`` from its score (``s_i = max(score, 0) / max score``), its
  rank (``r_i = 1 / sqrt(1 + rank)``) and its relevance ``q_i = softmax_i(max_o m(o, i) / tau)``: an item
  matters in as far as it is about what the options are about (the four options come from one trait, so an item
  on another trait matches all of them weakly). The question itself is deliberately generic ("What does Yara's
  time off look like?") and says little about which items matter;
* an option's support is ``sum_i w_i * (m(o, i) - mean_o' m(o', i))``: each item's matches are centred over
  the options, so an item that fits every option equally moves nothing;
* questions about an earlier time (``before``, ``earlier``, ``prior to``, ...) are answered from the older
  evidence: the option best supported by the newest half of the evidence is taken as the current state and
  excluded, and the rest are scored with weights that favour older items (by ``source_turns``; without any
  turn numbers, the second best option is taken);
* with nothing recalled, the options are scored by their similarity to the question alone, so the ``none``
  system measures how far questions and options leak their answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dimobench.catalog import STOP_WORDS
from dimobench.evaluate.embed import Embedder, get_embedder
from dimobench.evaluate.protocol import Recalled

PAST = re.compile(r"\b(before|earlier|prior to|previously|used to|originally|at first|in the past|formerly|"
                  r"back then|at the start)\b", re.IGNORECASE)
"""Words that make a question ask about an earlier time rather than the present."""

VERSION = "4"
_WORD = re.compile(r"[a-z0-9]+")
_CLAUSE = re.compile(r"(?<=[;.!?])\s+")


@dataclass(frozen=True)
class Choice:
    """The answerer's pick with the support of every option (for answers.jsonl)."""

    index: int
    support: list[float]
    mode: str
    """``context``, ``past`` or ``no_context``."""


class OfflineAnswerer:
    """Embedding-similarity answerer; see the module docstring for the formula."""

    name = "offline-embedding"
    version = VERSION

    def __init__(self, embedder: Embedder | None = None, tau: float = 0.05, lam: float = 0.5,
                 mix: float = 0.5) -> None:
        """Use ``embedder`` (default: the process-wide one), relevance temperature ``tau``, overlap weight ``lam``
        and ``mix``, the share of an item's best clause in its match (the rest: the mean over its clauses)."""
        self.embedder = embedder or get_embedder()
        self.tau = tau
        self.lam = lam
        self.mix = mix

    def describe(self) -> dict[str, object]:
        """What the report records about the answerer."""
        return {"name": self.name, "version": self.version, "embedding": self.embedder.backend, "tau": self.tau,
                "lexical_weight": self.lam, "best_clause_share": self.mix, "runtime": self.embedder.runtime}

    def choose(self, question: str, options: list[str], items: list[Recalled]) -> Choice:
        """Pick an option for ``question`` given the recalled ``items`` (best first)."""
        if not options:
            return Choice(-1, [], "no_options")
        emb = self.embedder.encode([question, *options])
        q, opts = emb[0], emb[1:]
        if not items:
            support = opts @ q
            return Choice(_argmax(support), [round(float(x), 5) for x in support], "no_context")
        match = self._match(options, opts, [it.text for it in items])
        votes = match - match.mean(axis=0, keepdims=True)  # options x items, centred per item
        # an item is relevant in as far as it is about what the options are about
        weights = self._weights(items, _softmax(match.max(axis=0) / self.tau, axis=0))
        if PAST.search(question):
            return self._past(items, weights, votes)
        support = votes @ weights
        return Choice(_argmax(support), [round(float(x), 5) for x in support], "context")

    def _match(self, options: list[str], opts: np.ndarray, texts: list[str]) -> np.ndarray:
        """``m(o, i)``: the option's match with the item's best clause mixed with its mean over the clauses
        (options x items)."""
        segs = [[c for c in _CLAUSE.split(t) if c.strip()] or [t] for t in texts]
        flat = [c for cs in segs for c in cs]
        m = opts @ self.embedder.encode(flat).T + self.lam * _overlap(options, flat)
        out = np.empty((len(options), len(texts)))
        start = 0
        for j, cs in enumerate(segs):
            part = m[:, start:start + len(cs)]
            out[:, j] = self.mix * part.max(axis=1) + (1.0 - self.mix) * part.mean(axis=1)
            start += len(cs)
        return out

    @staticmethod
    def _weights(items: list[Recalled], rel: np.ndarray) -> np.ndarray:
        scores = np.array([max(it.score, 0.0) for it in items], dtype=np.float64)
        top = scores.max()
        s = scores / top if top > 0 else np.ones_like(scores)
        r = 1.0 / np.sqrt(1.0 + np.arange(len(items)))
        w = s * r * rel.astype(np.float64)
        return w if w.sum() > 0 else s * r + 1e-12

    @staticmethod
    def _past(items: list[Recalled], w: np.ndarray, votes: np.ndarray) -> Choice:
        times = [max(it.source_turns) if it.source_turns else None for it in items]
        known = [t for t in times if t is not None]
        if not known:
            support = votes @ w
            order = np.argsort(-support, kind="stable")
            pick = int(order[1]) if len(order) > 1 else int(order[0])
            return Choice(pick, [round(float(x), 5) for x in support], "past")
        lo, hi = min(known), max(known)
        # newness in [0, 1]: 1 for the newest item, 0 for the oldest; unknown times sit in the middle
        new = np.array([0.5 if t is None or hi == lo else (t - lo) / (hi - lo) for t in times])
        if hi == lo:
            new = np.array([1.0 if t is not None else 0.5 for t in times])
        current = _argmax(votes @ (w * new))
        support = votes @ (w * (1.0 - new) + 1e-9 * w)
        support[current] = -np.inf
        pick = _argmax(support)
        shown = [round(float(x), 5) if np.isfinite(x) else None for x in support]
        return Choice(pick, shown, "past")  # type: ignore[arg-type]


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s", "ly", "er"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=200_000)
def content_stems(text: str) -> frozenset[str]:
    """Crude stems of the content words of ``text`` (stop words dropped)."""
    return frozenset(_stem(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS)


def _overlap(options: list[str], texts: list[str]) -> np.ndarray:
    """Set cosine |A & B| / sqrt(|A| |B|) of content stems, options x texts."""
    a = [content_stems(o) for o in options]
    b = [content_stems(t) for t in texts]
    out = np.zeros((len(a), len(b)))
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            if x and y:
                out[i, j] = len(x & y) / np.sqrt(len(x) * len(y))
    return out


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _argmax(x: np.ndarray) -> int:
    return int(np.argmax(x))
