"""How much of a suite's annotation a lookup built from the shipped catalog recovers, without any model.

A system can be tuned on the generator instead of on memory: match each turn against the catalog's templates
(slots as wildcards) and read off the trait and state of the template that matches. Two lookups, both over the
cue turns of the suite, each counting a turn as recovered when the templates that match it all belong to its
own (trait, state):

- ``whole``: the whole turn is one template of the catalog: a fixed cue, or one form (context + ask) of a
  composed act, after an optional lead (what the issue measured on the v1 catalog: 100%);
- ``parts``: any one piece of the turn is a template: a fixed cue, an act's context, or an act's ask. This is
  the stronger attack, and no catalog that ships its state-specific pieces can defeat it.
"""

from __future__ import annotations

import re

from dimobench.catalog import Catalog, template_pattern
from dimobench.suite.load import Suite

Key = tuple[str, str]
Table = list[tuple[Key, str, re.Pattern[str]]]


def _templates(catalog: Catalog) -> tuple[Table, Table]:
    whole: Table = []
    parts: Table = []
    for tp in catalog.topics:
        for tr in tp.traits:
            for st in tr.states:
                key = (tr.trait_id, st.state_id)
                for c in st.cues:
                    whole.append((key, *template_pattern(c.user)))
                    parts.append((key, *template_pattern(c.user)))
                for act in st.acts:
                    whole += [(key, *template_pattern(form)) for form in act.forms()]
                    parts += [(key, *template_pattern(text)) for text in act.context + [a.user for a in act.asks]]
    return whole, parts


def template_lookup(suite: Suite, catalog: Catalog) -> dict[str, float | None]:
    """The two recovery shares of the module docstring (None for a suite without catalog cue turns)."""
    whole, parts = _templates(catalog)
    cues = [t for t in suite.dialogues if t.annotation and t.annotation.kind == "cue" and t.annotation.state_id]
    if not cues:
        return {"whole": None, "parts": None}
    got = {"whole": 0, "parts": 0}
    for t in cues:
        low = t.user.lower()
        truth = (t.annotation.trait_id or "", t.annotation.state_id or "") if t.annotation else ("", "")
        for name, table, full in (("whole", whole, True), ("parts", parts, False)):
            found = {key for key, lit, rx in table if lit in low and (_ends(rx, t.user) if full else rx.search(t.user))}
            got[name] += found == {truth}
    return {k: round(v / len(cues), 4) for k, v in got.items()}


def _ends(rx: re.Pattern[str], text: str) -> bool:
    """``rx`` matches ``text`` to its end, from its start or after a lead (one or more words before it)."""
    return any(rx.fullmatch(text, i) for i in [0, *(m.end() for m in re.finditer(r"[.!?:,] ", text))])
