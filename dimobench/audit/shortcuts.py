"""Shortcut baselines: read the dialogue, understand none of it.

A memory benchmark should not be answerable by matching words. These read the turns up to the question's
``ask_turn``, as any system may, and pick by word overlap:

- ``bow_window``: the option sharing the most stemmed content words with the last ``window`` user turns;
- ``recent_mention``: the option whose words were mentioned most recently (ties: more words shared);
- ``*_inverse``: the same, picking the option the dialogue repeats least (a suite whose options avoid their own
  cues' words could leak that way instead);
- ``*_replies``: the same four over the assistant's replies, which a system also observes: an assistant that
  answers "since you've taken up climbing, ..." gives away what the user's own turns only show (a habit of
  LLM-written dialogue). Left out when a suite has no replies (imports);
- ``past_inverse``: the option least like, in meaning, anything the user said of their distant past (a user
  turn with a phrase such as "years ago" or "back then"). It finds the answer by elimination, never by the
  cues: a suite whose distant pasts name only states that are never the answer, and several of them per
  trait, can be answered that way (a blind reader's trick on seed 2637; 0.421 on XL seed 2636, where one
  persona recalled up to three past chapters of one trait).

If any comes near the memory systems, the suite measures keyword matching, not memory.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from dimobench.audit.items import Item, credit
from dimobench.catalog import stemmed_words
from dimobench.suite.load import Suite

WINDOW = 30
"""User turns the bag-of-words baseline reads before each question."""

PAST_TALK = re.compile(
    r"\b(years (ago|back)|(a )?long (time |while )?(ago|back)|ages ago|way back|a long way back|back in the day|"
    r"many (moons|years) ago|back then|in those days|used to|when i was (a |young|younger)|growing up|"
    r"going back many years|(another|a different|an old) (life|chapter)|long before|years and years|"
    r"there was a time)\b", re.IGNORECASE)
"""A phrase that places what a sentence says in the speaker's distant past (English; any suite's)."""


class Dialogue:
    """Each persona's user turns (``replies``: the assistant's replies) as stemmed word sets, in turn order."""

    def __init__(self, suites: Sequence[tuple[str, Suite]], replies: bool = False) -> None:
        self.turns: dict[tuple[str, str], list[tuple[int, frozenset[str]]]] = {}
        for key, suite in suites:
            for t in suite.dialogues:  # every turn, as a system observes it (imports: any speaker, no reply)
                said = t.assistant if replies else t.user
                self.turns.setdefault((key, t.persona_id), []).append((t.turn, stemmed_words(said)))
        for rows in self.turns.values():
            rows.sort(key=lambda r: r[0])

    def before(self, it: Item) -> list[tuple[int, frozenset[str]]]:
        """The persona's turns up to and including the question's ask turn."""
        rows = self.turns.get((it.suite, it.persona_id), [])
        return [r for r in rows if r[0] <= it.qa.ask_turn]


def bow_window(dialogue: Dialogue, it: Item, window: int = WINDOW) -> list[float]:
    """Per option: how many of its stemmed words the last ``window`` turns of ``dialogue`` use (counted with
    repeats)."""
    bag: Counter[str] = Counter()
    for _, words in dialogue.before(it)[-window:]:
        bag.update(words)
    return [float(sum(bag[w] for w in stemmed_words(opt))) for opt in it.options]


def recent_mention(dialogue: Dialogue, it: Item) -> list[float]:
    """Per option: the latest turn sharing one of its words, plus a fraction for how many it shares."""
    turns = dialogue.before(it)
    out = []
    for opt in it.options:
        words = stemmed_words(opt)
        latest = next(((n, len(words & seen)) for n, seen in reversed(turns) if words & seen), (0, 0))
        out.append(latest[0] + latest[1] / 100.0)
    return out


def past_inverse(suites: Sequence[tuple[str, Suite]], items: Sequence[Item]) -> list[list[float]]:
    """Per item and option: minus the option's best cosine (the audit's sentence embedding) with the persona's
    user turns up to the question that speak of the distant past (:data:`PAST_TALK`); all 0 where there are
    none, so the item is a tie."""
    said: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for key, suite in suites:
        for t in suite.dialogues:
            if PAST_TALK.search(t.user):
                said.setdefault((key, t.persona_id), []).append((t.turn, t.user))
    if not said:
        return [[0.0] * len(it.options) for it in items]
    from dimobench.embed import fixed_embedder

    texts = list(dict.fromkeys([u for turns in said.values() for _, u in turns]
                               + [o for it in items for o in it.options]))
    rows = dict(zip(texts, fixed_embedder().encode(texts), strict=True))
    out = []
    for it in items:
        past = [rows[u] for n, u in said.get((it.suite, it.persona_id), []) if n <= it.qa.ask_turn]
        # rounded: the same pick whichever runtime (torch, ONNX Runtime) encoded the texts
        out.append([-round(max(float(rows[o] @ p) for p in past), 6) if past else 0.0 for o in it.options])
    return out


def run_shortcuts(suites: Sequence[tuple[str, Suite]], items: Sequence[Item]) -> dict[str, list[float]]:
    """Credit per item for each shortcut baseline (the ``*_replies`` ones only where some turn has a reply)."""
    sides = [(Dialogue(suites), "")]
    if any(t.assistant.strip() for _, suite in suites for t in suite.dialogues):
        sides.append((Dialogue(suites, replies=True), "_replies"))
    out: dict[str, list[float]] = {}
    for dialogue, side in sides:
        for name, fn in (("bow_window", bow_window), ("recent_mention", recent_mention)):
            scores = [fn(dialogue, it) for it in items]
            out[f"{name}{side}"] = [credit(s, it.gold) for s, it in zip(scores, items, strict=True)]
            out[f"{name}{side}_inverse"] = [credit([-x for x in s], it.gold)
                                           for s, it in zip(scores, items, strict=True)]
    out["past_inverse"] = [credit(s, it.gold) for s, it in zip(past_inverse(suites, items), items, strict=True)]
    return out
