"""How varied a suite's text is, how much of it another suite repeats, and text lints.

- ``distinct_user_turns``: share of user turns whose text occurs once in the suite;
- ``distinct_templates``: the same after numbers, names, cities, weekdays and months are replaced by
  placeholders (two turns that differ only there come from one template);
- ``overlap_with``: per ``--against`` suite, the share of this suite's distinct user texts found verbatim in it
  (two seeds should share little);
- ``distinct_option_texts``: how many different option texts the suite's items offer;
- ``cue_word_share``: share of cue turns sharing a stemmed content word with their own state's description or
  option texts (a word match then points at the answer; the catalog's words check keeps it near zero);
- ``template_lookup``: the share of cue turns whose trait and state a lookup of the catalog's templates
  recovers, whole turns and single pieces (:mod:`dimobench.audit.lookup`);
- ``sentence_retold``: the share of user-turn sentences (four words or more, the catalog's leads left out) that
  their persona has already said twice before, and ``sentence_most_told``, the most times one persona says one
  sentence: what a reader notices long before any template count does (the same question seven times in 25
  turns);
- ``reply_heard_again``: the share of turns whose assistant reply their persona has already been given word for
  word (a suite without replies: None);
(the text lints are :mod:`dimobench.audit.lints`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from dimobench.audit.lookup import template_lookup
from dimobench.catalog import Catalog, stemmed_words, suite_catalog
from dimobench.suite.flags import norm
from dimobench.suite.load import Suite

_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")


def _template(text: str, names: re.Pattern[str]) -> str:
    return names.sub("<w>", _NUMBER.sub("<n>", norm(text)))


def _names(catalog: Catalog, suite: Suite) -> re.Pattern[str]:
    words = {w.lower() for w in (*catalog.first_names, *catalog.last_names, *catalog.cities,
                                 *catalog.slots.get("weekday", []), *catalog.slots.get("month", []))}
    words |= {e.name.lower() for p in suite.personas for e in p.entities}
    ordered = sorted((w for w in words if w), key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in ordered) + r")\b") if ordered else re.compile("$^")


def user_texts(suite: Suite) -> list[str]:
    """Every turn's ``user`` text, normalised (imported suites: whoever spoke)."""
    return [norm(t.user) for t in suite.dialogues if t.user.strip()]


def diversity(suite: Suite, against: Sequence[tuple[str, Suite]] = (), catalog: Catalog | None = None
              ) -> dict[str, object]:
    """The figures of the module docstring for one suite."""
    catalog = catalog or suite_catalog(suite.manifest.config)
    texts = user_texts(suite)
    counts = Counter(texts)
    names = _names(catalog, suite)
    templates = Counter(_template(t, names) for t in texts)
    n = len(texts) or 1
    mine = set(counts)
    overlap = {}
    for key, other in against:
        theirs = set(user_texts(other))
        overlap[key] = round(len(mine & theirs) / len(mine), 4) if mine else None
    return {"user_turns": len(texts), "distinct_user_turns": round(sum(1 for c in counts.values() if c == 1) / n, 4),
            "distinct_templates": round(len(templates) / n, 4), "overlap_with": overlap,
            "distinct_option_texts": len({o for q in suite.qa for o in q.options}),
            "cue_word_share": cue_word_share(suite, catalog), "template_lookup": template_lookup(suite, catalog),
            **sentence_repeats(suite, frozenset(norm(x) for x in (*catalog.leads, *catalog.trial_leads))),
            "reply_heard_again": reply_heard_again(suite)}


def reply_heard_again(suite: Suite) -> float | None:
    """The ``reply_heard_again`` of the module docstring."""
    heard: set[tuple[str, str]] = set()
    total = again = 0
    for turn in suite.dialogues:
        if not turn.assistant.strip():
            continue
        key = (turn.persona_id, norm(turn.assistant))
        again += key in heard
        heard.add(key)
        total += 1
    return round(again / total, 4) if total else None


_SENTENCE = re.compile(r"[^.!?]+[.!?]?")


def sentence_repeats(suite: Suite, leads: frozenset[str] = frozenset()) -> dict[str, float | int]:
    """``sentence_retold`` and ``sentence_most_told`` of the module docstring (a persona is a ``persona_id``;
    ``leads``, normalised, are not counted)."""
    told: Counter[tuple[str, str]] = Counter()
    total = retold = 0
    longest_first = sorted(leads, key=len, reverse=True)
    for turn in suite.dialogues:
        text = norm(turn.user)
        # a lead ending in ":" ("New topic:") is no sentence of its own: take it off first
        lead = next((x for x in longest_first if text.startswith(f"{x} ")), "")
        for sentence in _SENTENCE.findall(text[len(lead):] if lead else text):
            sentence = sentence.strip()
            if len(sentence.split()) < 4 or sentence in leads:
                continue
            key = (turn.persona_id, sentence)
            retold += told[key] >= 2
            told[key] += 1
            total += 1
    return {"sentence_retold": round(retold / total, 4) if total else 0.0,
            "sentence_most_told": max(told.values(), default=0)}


def cue_word_share(suite: Suite, catalog: Catalog) -> float | None:
    """The ``cue_word_share`` of the module docstring; None for a suite without catalog-annotated cues."""
    words: dict[tuple[str, str], frozenset[str]] = {}
    known = {tr.trait_id: tr for tp in catalog.topics for tr in tp.traits}
    for tr in known.values():
        for st in tr.states:
            words[(tr.trait_id, st.state_id)] = stemmed_words(" ".join([st.description, *st.answers,
                                                                         *st.recommendations]))
    shared = [bool(stemmed_words(t.user) & words[key]) for t in suite.dialogues
              if t.annotation and t.annotation.kind == "cue"
              and (key := (t.annotation.trait_id or "", t.annotation.state_id or "")) in words]
    return round(sum(shared) / len(shared), 4) if shared else None
