"""How varied a suite's text is, how much of it another suite repeats, and text lints.

- ``distinct_user_turns``: share of user turns whose text occurs once in the suite;
- ``distinct_templates``: the same after numbers, names, cities, weekdays and months are replaced by
  placeholders (two turns that differ only there come from one template);
- ``overlap_with``: per ``--against`` suite, the share of this suite's distinct user texts found verbatim in it
  (two seeds should share little);
- lints: ``unfilled_slot`` (a ``{slot}`` left in any text), ``foreign_home_city`` (the user calls a catalog city
  other than their own home).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from dimobench.catalog import Catalog, suite_catalog
from dimobench.suite.flags import norm
from dimobench.suite.load import Suite

_SLOT = re.compile(r"\{[a-z_0-9]+\}")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_HOME = ("here in ", "i live in ", "back home in ", "living in ", "home in ")


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
            "distinct_templates": round(len(templates) / n, 4), "overlap_with": overlap}


def lints(suite: Suite, catalog: Catalog | None = None) -> dict[str, list[str]]:
    """``kind -> locations`` (``persona:turn`` or ``qa_id``) of every text lint found."""
    catalog = catalog or suite_catalog(suite.manifest.config)
    out: dict[str, list[str]] = {"unfilled_slot": [], "foreign_home_city": []}
    home = {p.persona_id: str(p.profile.get("city", "")).lower() for p in suite.personas}
    cities = [c.lower() for c in catalog.cities]
    for t in suite.dialogues:
        where = f"{t.persona_id}:{t.turn}"
        if _SLOT.search(t.user) or _SLOT.search(t.assistant):
            out["unfilled_slot"].append(where)
        said = t.user.lower()
        for lead in _HOME:
            i = said.find(lead)
            if i >= 0 and any(said.startswith(c, i + len(lead)) and c != home.get(t.persona_id) for c in cities):
                out["foreign_home_city"].append(where)
                break
    for q in suite.qa:
        if _SLOT.search(q.question) or any(_SLOT.search(o) for o in q.options):
            out["unfilled_slot"].append(q.qa_id)
    return out
