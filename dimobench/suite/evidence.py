"""What one persona's turns show, indexed for questions and flags: cue turns by trait and state, confounders and
distant pasts by trait, and which earlier user turn said an option's words on another subject."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from dimobench.catalog import stemmed_words
from dimobench.suite.schema import Turn

MAX_EVIDENCE = 5
"""Cue turns an item records as its evidence (the latest)."""
SAID_SHARED = 2
"""Content stems (:func:`~dimobench.catalog.stemmed_words`) an option may share with one earlier user turn on
another subject before that turn reads as its answer: "Hunting resale apps for pre-owned gems" is a shopping
option, but a user who asked "How do I spot a fake on resale apps?" about a vintage jacket has, to a reader,
said it (a blind reader picked it three times over the shopping state the cues showed)."""


@dataclass
class EvidenceIndex:
    """Per persona: cue turns by (trait, state) and confounder turns by trait, in turn order, and every user turn
    by the content stems it holds (for :meth:`first_said`)."""

    cues: dict[tuple[str, str], list[int]]
    confounders: dict[str, list[tuple[int, str | None]]]
    pasts: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    """The user's distant pasts (decoy turns) by trait, as (turn, state), in order."""
    turns: list[tuple[int, str, str | None]] = field(default_factory=list, repr=False, compare=False)
    """Every user turn as (turn, text, the trait its annotation names or None), in order."""
    _said: dict[str, list[tuple[int, str | None]]] | None = field(default=None, init=False, repr=False, compare=False)
    _first: dict[tuple[str, str], int | None] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def build(cls, turns: list[Turn]) -> EvidenceIndex:
        """Index one persona's turns (cues by trait and state, confounders by trait; stems when first asked)."""
        cues: dict[tuple[str, str], list[int]] = {}
        conf: dict[str, list[tuple[int, str | None]]] = {}
        pasts: dict[str, list[tuple[int, str]]] = {}
        for t in turns:
            a = t.annotation
            if a is None or a.trait_id is None:
                continue
            if a.kind == "cue" and a.state_id:
                cues.setdefault((a.trait_id, a.state_id), []).append(t.turn)
            elif a.kind in ("entity", "decoy", "chatter"):
                conf.setdefault(a.trait_id, []).append((t.turn, a.state_id))
                if a.kind == "decoy" and a.state_id:
                    pasts.setdefault(a.trait_id, []).append((t.turn, a.state_id))
        return cls(cues, conf, pasts,
                   [(t.turn, t.user, t.annotation.trait_id if t.annotation else None) for t in turns])

    def recalled(self, trait: str, upto: int) -> set[str]:
        """The states of ``trait`` the user recalled as a distant past up to turn ``upto``."""
        return {state for n, state in self.pasts.get(trait, ()) if n <= upto}

    @property
    def said(self) -> dict[str, list[tuple[int, str | None]]]:
        """Content stem -> the user turns holding it, as (turn, the trait its annotation names or None), in order;
        built on first use (only the validity rules and the audit's flags ask: stemming every turn was a fifth of
        a default XL generation)."""
        if self._said is None:
            said: dict[str, list[tuple[int, str | None]]] = {}
            for n, text, about in self.turns:
                for word in stemmed_words(text):
                    said.setdefault(word, []).append((n, about))
            self._said = said
        return self._said

    def first_said(self, text: str, trait: str) -> int | None:
        """The first user turn not about ``trait`` sharing :data:`SAID_SHARED` content stems with ``text``."""
        key = (text, trait)
        if key not in self._first:
            shared: dict[int, int] = {}
            said = self.said
            for word in stemmed_words(text):
                for n, about in said.get(word, ()):
                    if about != trait:
                        shared[n] = shared.get(n, 0) + 1
            self._first[key] = min((n for n, c in shared.items() if c >= SAID_SHARED), default=None)
        return self._first[key]

    def evidence(self, trait: str, state: str, upto: int, since: int = 0) -> list[int]:
        """The last ``MAX_EVIDENCE`` cue turns showing ``state`` of ``trait`` in ``(since, upto]``."""
        turns = self.cues.get((trait, state), [])  # in turn order: bisect, not a scan (stage 5 asks ~80,000 times)
        end = bisect_right(turns, upto)
        return turns[max(bisect_right(turns, since), end - MAX_EVIDENCE):end]

    def confounder_state(self, trait: str, upto: int, exclude: set[str]) -> str | None:
        """The state shown by the latest confounder of ``trait`` up to ``upto`` that is not in ``exclude``."""
        for n, state in reversed(self.confounders.get(trait, [])):
            if n <= upto and state and state not in exclude:
                return state
        return None
