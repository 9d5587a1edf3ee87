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
  evidence by contrast (v5): each item gets a newness in [0, 1] from its first source turn (the oldest item 0,
  the newest 1), and an option's support is its weighted mean vote among the older items (weights
  ``w_i * (1 - new_i)``) minus its weighted mean vote among the newer ones (``w_i * new_i``): the state the
  older evidence shows more than the newer evidence does. It assumes, as a suite's questions guarantee (issue 15),
  that every option answers the question: an option that nothing supports rises when the newer items reject it
  most. v4 instead took the option the newest half supported as the current state, excluded it and picked the
  best of the rest by the older items, with an item's time its last source turn; one misread current state cost
  the item, which left every memory system near chance on ``temporal`` questions (docs/measurements.md,
  "Questions about the past"). ``past_rule="exclude"`` (``--answerer offline-v4`` / ``gloss-v4``) keeps v4.
  Without any turn numbers, or with one time for all, both take the second best option;
* with nothing recalled, the options are scored by their similarity to the question alone, so the ``none``
  system measures how far questions and options leak their answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dimobench.catalog import STOP_WORDS
from dimobench.embed import Embedder, get_embedder
from dimobench.evaluate.protocol import Recalled

PAST = re.compile(r"\b(before|earlier|prior to|previously|used to|originally|at first|in the past|formerly|"
                  r"back then|at the start)\b", re.IGNORECASE)
"""Words that make a question ask about an earlier time rather than the present."""

VERSION = "5"
PAST_RULES = ("contrast", "exclude")
"""How a question about an earlier time is answered: v5's ``contrast`` (default) or v4's ``exclude``."""
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
                 mix: float = 0.5, past_rule: str = "contrast") -> None:
        """Use ``embedder`` (default: the process-wide one), relevance temperature ``tau``, overlap weight ``lam``,
        ``mix``, the share of an item's best clause in its match (the rest: the mean over its clauses), and
        ``past_rule`` for questions about an earlier time (:data:`PAST_RULES`)."""
        if past_rule not in PAST_RULES:
            raise ValueError(f"past_rule must be one of {PAST_RULES}, not {past_rule!r}")
        self.embedder = embedder or get_embedder()
        self.tau = tau
        self.lam = lam
        self.mix = mix
        self.past_rule = past_rule
        if past_rule == "exclude":
            self.version = "4"

    def describe(self) -> dict[str, object]:
        """What the report records about the answerer."""
        return {"name": self.name, "version": self.version, "embedding": self.embedder.backend, "tau": self.tau,
                "lexical_weight": self.lam, "best_clause_share": self.mix, "past_rule": self.past_rule,
                "runtime": self.embedder.runtime}

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
            return self._past(items, weights, votes) if self.past_rule == "contrast" else self._past_v4(
                items, weights, votes)
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
        new = _newness([min(it.source_turns) if it.source_turns else None for it in items])
        if new is None:
            return _second_best(votes @ w)
        old_w, new_w = w * (1.0 - new), w * new
        support = votes @ old_w / max(old_w.sum(), 1e-12) - votes @ new_w / max(new_w.sum(), 1e-12)
        return Choice(_argmax(support), [round(float(x), 5) for x in support], "past")

    @staticmethod
    def _past_v4(items: list[Recalled], w: np.ndarray, votes: np.ndarray) -> Choice:
        times = [max(it.source_turns) if it.source_turns else None for it in items]
        new = _newness(times)
        if new is None:
            if all(t is None for t in times):
                return _second_best(votes @ w)
            new = np.array([1.0 if t is not None else 0.5 for t in times])  # one time for all: all newest
        current = _argmax(votes @ (w * new))
        support = votes @ (w * (1.0 - new) + 1e-9 * w)
        support[current] = -np.inf
        pick = _argmax(support)
        shown = [round(float(x), 5) if np.isfinite(x) else None for x in support]
        return Choice(pick, shown, "past")  # type: ignore[arg-type]


def _newness(times: list[int | None]) -> np.ndarray | None:
    """Each item's place in time, 0 for the oldest and 1 for the newest (unknown: 0.5); None when the items
    cannot be ordered (no turn numbers, or one time for all)."""
    known = [t for t in times if t is not None]
    if not known or min(known) == max(known):
        return None
    lo, hi = min(known), max(known)
    return np.array([0.5 if t is None else (t - lo) / (hi - lo) for t in times])


def _second_best(support: np.ndarray) -> Choice:
    order = np.argsort(-support, kind="stable")
    pick = int(order[1]) if len(order) > 1 else int(order[0])
    return Choice(pick, [round(float(x), 5) for x in support], "past")


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
