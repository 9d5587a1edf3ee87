"""The glossing answerer (``--answerer gloss``): the shared offline answerer, reading each recalled turn the way
the suite's catalog means it.

Why it exists: catalog-v3's cues show a state through behaviour that shares no word with the options ("Tabata
in the spare room again, legs like jelly" for "Short intense circuits at home"). MiniLM cannot make that step,
so with the plain answerer (``offline``, v4) every memory system scores within a few points of ``none`` however
well it recalls (docs/measurements.md, "Issue 15's comparisons on catalog-v3"), while other people's habits
and the user's distant past, written as the catalog's plain habit phrases, read easily:
the confounders outvote the cues.
A person reading the dialogue makes the step at once (two blind readers: 40 of 40 items with the dialogue).

This answerer stands in for such a reader. Before the v4 formula runs, each piece of one of the catalog's cue
templates found in a recalled item (a fixed cue, an act's context or an act's ask; slots as wildcards, as
:mod:`dimobench.audit.lookup` matches them) is replaced by its state's gloss: the state's description and its
habit phrases, exactly the text the ``oracle`` hands the same formula. Everything else is unchanged: the rest
of the item, and items that match no cue piece (other people, the distant past, chatter, fillers, a system's
own summaries), are read as written, the system's ranking and scores weigh the items, and the past-question
rule still orders them by their source turns. So the answer still depends only on what the system recalled,
and ``none`` (nothing recalled) is answered exactly as by ``offline``.

What it is not: a reader of text the catalog does not hold. On an imported or LLM-written suite no cue piece
matches and it answers as ``offline`` does; use an LLM answerer there (``--answerer openai/...``). The gold,
the latent plan and the question's trait are never read; only the suite's catalog is, as the catalog's own
language.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from dimobench.catalog import template_pattern
from dimobench.evaluate.answerer import Choice, OfflineAnswerer
from dimobench.evaluate.protocol import Recalled

if TYPE_CHECKING:
    from dimobench.catalog import Catalog
    from dimobench.embed import Embedder
    from dimobench.suite.load import Suite

VERSION = "1"
MIN_LITERAL = 12
"""A cue piece is looked for only by a literal run of at least this many characters; a shorter template
("{x} again.") would match half the dialogue."""

Key = tuple[str, str]


def state_gloss(description: str, habits: list[str]) -> str:
    """What a state means in words the options are written in: its description and its habit phrases (one
    text, so every state fits in k); the ``oracle``'s items and this answerer's readings are this text."""
    return "; ".join([description, *habits])


class CatalogReading:
    """Cue pieces of one catalog, each with the gloss of the state it belongs to."""

    def __init__(self, catalog: Catalog) -> None:
        """Index every fixed cue, act context and act ask of ``catalog`` that belongs to one state only and is no
        filler's text ("How long will it keep in the fridge?" is an ask of two diets: it says nothing of which)."""
        self.glosses: dict[Key, str] = {}
        owners: dict[str, set[Key]] = {}
        for tp in catalog.topics:
            for tr in tp.traits:
                for st in tr.states:
                    key = (tr.trait_id, st.state_id)
                    self.glosses[key] = state_gloss(st.description, list(st.habits))
                    texts = [c.user for c in st.cues]
                    texts += [piece for act in st.acts for piece in act.context + [a.user for a in act.asks]]
                    for text in texts:
                        owners.setdefault(text, set()).add(key)
        neutral = {ex.user for ex in catalog.filler} | {ex.user for tp in catalog.topics for ex in tp.chatter}
        neutral |= {piece for act in catalog.filler_acts for piece in act.context + [a.user for a in act.asks]}
        self._pieces: list[tuple[Key, str, re.Pattern[str]]] = []
        for text, keys in owners.items():
            literal, rx = template_pattern(text)
            if len(keys) == 1 and text not in neutral and len(literal) >= MIN_LITERAL:
                self._pieces.append((next(iter(keys)), literal, rx))
        self._seen: dict[str, tuple[tuple[int, int, Key], ...]] = {}

    def _spans(self, text: str) -> tuple[tuple[int, int, Key], ...]:
        """Where cue pieces occur in ``text``: (start, end, state), in text order, overlaps resolved to the
        earlier (then longer) piece."""
        if text not in self._seen:
            low = text.lower()
            found = sorted((m.start(), -m.end(), key) for key, lit, rx in self._pieces if lit in low
                           for m in rx.finditer(text))
            spans: list[tuple[int, int, Key]] = []
            for start, neg_end, key in found:
                if not spans or start >= spans[-1][1]:
                    spans.append((start, -neg_end, key))
            self._seen[text] = tuple(spans)
        return self._seen[text]

    def states(self, text: str) -> tuple[Key, ...]:
        """The (trait, state) pairs whose cue pieces occur in ``text``, in text order."""
        return tuple(dict.fromkeys(key for _, _, key in self._spans(text)))

    def read(self, text: str) -> str:
        """``text`` as the catalog means it: each cue piece replaced by its state's gloss (once per state; the
        rest of the text, a lead or another person's habit in a merged item, is kept as written)."""
        spans = self._spans(text)
        if not spans:
            return text
        out, at, glossed = [], 0, set()
        for start, end, key in spans:
            out.append(text[at:start])
            if key not in glossed:
                out.append(f" {self.glosses[key]}. ")
                glossed.add(key)
            at = end
        out.append(text[at:])
        return " ".join("".join(out).split())


_READINGS: dict[int, tuple[Catalog, CatalogReading]] = {}
"""Readings by catalog object (held here, so an id is never reused)."""


class GlossAnswerer(OfflineAnswerer):
    """The v4 answerer over recalled items read through the suite's catalog (module docstring)."""

    name = "offline-gloss"

    def __init__(self, embedder: Embedder | None = None, past_rule: str = "contrast") -> None:
        """As :class:`OfflineAnswerer` (default settings but ``past_rule``); unbound, it reads items as written
        until :meth:`bind_suite`."""
        super().__init__(embedder, past_rule=past_rule)
        self.reading: CatalogReading | None = None

    def describe(self) -> dict[str, object]:
        """The offline answerer's record, with this reader's version and rule."""
        return {**super().describe(), "gloss_version": VERSION, "reads": "recalled cue pieces as their catalog "
                "state's description and habits"}

    def bind_suite(self, suite: Suite) -> None:
        """Read the items of ``suite``'s questions through the catalog the offline generator wrote it from; an
        imported or LLM-written suite's items are read as written."""
        from dimobench.catalog import suite_catalog

        self.reading = None
        config = suite.manifest.config
        if suite.manifest.status == "imported" or config.get("generator", "offline") != "offline":
            return
        catalog = suite_catalog(config)  # loaded once per catalog folder (lru-cached), so its id is stable
        if id(catalog) not in _READINGS:
            _READINGS[id(catalog)] = (catalog, CatalogReading(catalog))
        self.reading = _READINGS[id(catalog)][1]

    def choose(self, question: str, options: list[str], items: list[Recalled]) -> Choice:
        """Pick as :meth:`OfflineAnswerer.choose`, over the items' catalog readings."""
        reading = self.reading
        if reading is not None:
            items = [Recalled(reading.read(it.text), it.score, list(it.source_turns)) for it in items]
        return super().choose(question, options, items)


OFFLINE_ANSWERERS = ("offline", "gloss", "offline-v4", "gloss-v4")
"""``--answerer`` values that need no LLM: ``offline`` (:class:`OfflineAnswerer`, formula v5) and ``gloss``;
``-v4`` answers questions about an earlier time by v4's rule (``past_rule="exclude"``), for comparing with
reports written before v5."""


def make_offline_answerer(kind: str, embedder: Embedder | None = None) -> OfflineAnswerer:
    """The offline answerer ``kind`` names (one of :data:`OFFLINE_ANSWERERS`)."""
    base, _, version = kind.partition("-")
    rule = "exclude" if version == "v4" else "contrast"
    return GlossAnswerer(embedder, rule) if base == "gloss" else OfflineAnswerer(embedder, past_rule=rule)
