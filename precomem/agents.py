"""Sub-agents: what proposition to store, which beliefs a regime touches, and how strongly.

The engine calls them through :class:`SubAgents`, a small Protocol an LLM-backed implementation can fill
later. :class:`RuleAgents` is the deterministic offline implementation. Gating and the updates themselves stay
in the engine and are always deterministic: an agent only proposes propositions, targets and strengths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Protocol

from precomem.encoders import tokenize

Regime = Literal["MAINTAIN", "PROFILE", "CORRECT"]


@dataclass(frozen=True)
class Proposition:
    """One thing worth remembering from an observation, in the user's own words."""

    text: str
    """The proposition text (a sentence of the observation, or all of it)."""
    cls: str
    """statement | event | request | other | past (selects the confidence band)."""
    about: str
    """user (now) | other (someone else) | past (the user's distant past)."""
    confidence: float
    """The agent's own confidence, clipped by the engine to the class band."""
    protected: bool = False
    """Explicit events are protected from decay."""


@dataclass(frozen=True)
class Candidate:
    """A retrieved belief as an agent sees it, scored against one proposition."""

    id: str
    text: str
    kind: str
    about: str
    confidence: float
    similarity: float
    """Calibrated similarity to the proposition, 0 (unrelated) .. 1 (paraphrase)."""
    contradiction: float
    """Gated contradiction probability of the proposition against this belief."""


@dataclass(frozen=True)
class Target:
    """A belief an operator should touch, with a strength in [0, 1]."""

    id: str
    strength: float


class SubAgents(Protocol):
    """The decisions an LLM may take over from the rules."""

    @property
    def name(self) -> str:
        """Short label of the implementation, recorded with the run (``rule``, a backend spec, ...)."""
        ...

    def extract(self, text: str, max_props: int, split_min_words: int) -> list[Proposition]:
        """Propositions to remember from one observation (possibly none)."""
        ...

    def targets(
        self,
        regime: Regime,
        prop: Proposition,
        cands: list[Candidate],
        support: float,
        contra: float,
        related: float | None = None,
    ) -> list[Target]:
        """Beliefs the regime's operator acts on for this proposition, with strengths (``related``: the
        similarity at which a belief is on the proposition's topic, for graded support)."""
        ...


def floor_support(support: list[Target], by_id: dict[str, Candidate], floor: float, full: float) -> list[Target]:
    """Support capped by a ramp from 0 at calibrated similarity ``floor`` to 1 at ``full``: a belief below the
    floor is on the observation's topic (it competes, the clock charges it) but too loosely related to be
    supported (``PreCoMemConfig.partial_support_similarity``)."""
    span = max(full - floor, 1e-9)
    capped = [Target(s.id, min(s.strength, (by_id[s.id].similarity - floor) / span)) for s in support]
    return [s for s in capped if s.strength > 0.0]


_SENT = re.compile(r"(?<=[.!?;])\s+")
_FIRST = re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|us|our)\b", re.IGNORECASE)
_SUBJ_FIRST = re.compile(r"\b(i|i'm|i've|i'd|i'll|we|we're|we've|me|myself)\b", re.IGNORECASE)
_REQUEST = re.compile(
    r"^\s*(please\b|can you|could you|would you|will you|help\b|rewrite|write|draft|summari[sz]e|translate|"
    r"explain|give me|show me|tell me|"
    r"list|suggest|recommend|find|make|create|generate|fix|check|what|how|why|"
    r"when|where|which|who|is there|are there|do you|any (ideas|tips))",
    re.IGNORECASE,
)
_PAST = re.compile(
    r"\b(used to|back in|back when|(years|decades|ages|a lifetime|a long time|a decade|a while) (ago|back)|"
    r"long ago|old diary|previous job|when i was|"
    r"as a (kid|child|teen|teenager|student|young \w+)|growing up|in (college|high school|university)|"
    r"at (college|university)|(college|university|school|student) days|"
    r"in my (early |late |mid-?)?(twenties|teens|thirties|forties|youth|student years)|looking back|"
    r"back then|once upon|in the old days|gap year|another life|a different (period|time|chapter) of my life)\b",
    re.IGNORECASE,
)
_REL = (
    r"(friend|friends|sister|brother|mom|mother|dad|father|parents|wife|husband|partner|boyfriend|"
    r"girlfriend|son|daughter|kids|boss|manager|coworker|co-worker|colleague|teammate|roommate|flatmate|"
    r"housemate|neighbou?r|cousin|aunt|uncle|grandma|grandpa|grandmother|grandfather|classmate|nephew|niece)"
)
_OTHER_ANY = re.compile(
    # "my colleague Leon got through three audiobooks", "my old school friend Julia bought a kayak": a third
    # party (optionally named) as the subject of a verb, anywhere in the sentence.
    rf"\b(?i:my|our|a|his|her|their)(?: \w+){{0,2}} (?i:{_REL})s?(?:'s)?(?: [A-Z][a-z]+)?,? "
    r"(?i:\w+ed|got|ran|went|did|made|took|read|rode|ate|had|was|is|has|told|said|kept|spent|left|lost|won|"
    r"caught|drove|flew|swam|wrote|built|sold|paid|slept|woke|bought|just|always|never|still|keeps|says|"
    r"thinks|loves|hates|likes|lives|works|goes|plays|reads|runs|eats|who)\b"
)
_THIRD_PARTY = re.compile(rf"\b(my|our)(?: \w+){{0,2}} {_REL}s?\b|\bsomeone like\b", re.IGNORECASE)
_THIRD_SUBJ = re.compile(r"\b(they|he|she)\b", re.IGNORECASE)
_REPORTED = re.compile(
    # Reported news and hearsay describe the world, not the user.
    r"\b(i read that|i heard that|i saw that|apparently|the news|news (said|about|that)|someone (on|at|said)|"
    r"a (documentary|study|report|survey) (said|says|claimed|claims|found|about)|according to|there was news|"
    r"did you (see|hear) that|there'?s a documentary)\b",
    re.IGNORECASE,
)
_OTHER_START = re.compile(
    r"^\s*((?i:my "
    r"(friend|friends|sister|brother|mom|mother|dad|father|parents|wife|husband|partner|boyfriend|"
    r"girlfriend|son|daughter|kids|boss|manager|coworker|colleague|roommate|neighbou?r|cousin|aunt|uncle|"
    r"grandma|grandpa|grandmother|grandfather|team|classmate)s?\b|he\b|she\b|they\b)|"
    # A capitalised first word is only taken for a name when a verb follows ("Jake throws ...").
    r"[A-Z][a-z]+(?: [A-Z][a-z]+)? (?:is|was|has|had|and|just|always|never|really|still|\w+ed|"
    r"(?:love|like|hate|say|go|keep|think|want|throw|play|work|live|host|plan|spend|seem|get|make|take)s)\b)",
)
_EVENT = re.compile(
    r"\b(moved|married|engaged|divorced|born|graduated|retired|promoted|hired|fired|laid off|diagnosed|"
    r"broke up|passed away|adopted|bought a (house|home|car)|started a new job|new job|pregnant|"
    r"on (monday|tuesday|wednesday|thursday|friday|saturday|sunday)|next (week|month|year)|"
    r"(january|february|march|april|may|june|july|august|september|october|november|december) \d)\b",
    re.IGNORECASE,
)
"""Life events and dated plans, named outright."""
_IRREGULAR = (
    "went|got|made|took|saw|met|had|found|bought|began|ran|won|lost|gave|wrote|read|sang|drew|built|came|left|"
    "felt|heard|taught|caught|brought|told|flew|drove|swam|ate|threw|sold|spent|kept|held|became|chose|fell|"
    "rode|sent|did|tried|finished|joined|started|visited|signed up|launched|painted|played"
)
_OCCASION = re.compile(
    # One thing that happened: the user (or "we") did something, in the past tense or on a named occasion.
    r"\b(?:i|we)(?: \w+ly)?(?: just| finally| also| actually| even)? (?:\w+ed|" + _IRREGULAR + r")\b"
    r"|\b(yesterday|last (night|week|weekend|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"summer|winter|spring|fall|autumn)|this (morning|afternoon|week|weekend|month)|earlier today|today|tonight|"
    r"the other day|a (few|couple of) (days|weeks) ago|(days|weeks) ago)\b",
    re.IGNORECASE,
)
"""A particular occasion in the user's life ("I went to a support group yesterday").

Known to be too broad (measured, kept because the stricter rules tried cost LoCoMo evidence recall, 0.526 ->
0.484 / 0.495): "-ed" also matches present tenses ("I need more sleep"), "I" need not be the sentence's
subject ("higher than I expected"), and a question ("Can I cancel an order I placed last week?") can match.
Such sentences become protected events."""
_HABIT = re.compile(
    r"\b(every|always|usually|often|normally|typically|never|each (day|week|morning|evening|night)|"
    r"most (days|nights|weekends|evenings|mornings|weeks))\b",
    re.IGNORECASE,
)
"""Habit words: a recurring pattern is a trait that may drift, not a one-off event."""
_STRONG = re.compile(r"\b(always|every|love|hate|can'?t stand|usually|never|favou?rite|really)\b", re.IGNORECASE)
_DISCOURSE = frozenset(
    "hey hi hello okay ok right well oh yes yeah sure thanks thank please sorry quick question check thing things "
    "something anything one another next new topic different unrelated totally random bit small help hand need "
    "hoping hope let run bother again note changing subject here's got more".split()
)
"""Words of a conversational opener ("Okay, different thing.", "I need a hand with something.", "One more
thing."), which says nothing about the user: a sentence made only of these and stopwords is not worth a belief.
("more" is a stance word the lexical index keeps; here it only decides whether a sentence says anything.)"""


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (keeps the words, trims whitespace)."""
    return [s.strip() for s in _SENT.split(text.strip()) if s.strip()]


def says_something(sentence: str) -> bool:
    """Whether ``sentence`` has a word beyond stopwords and a conversational opener's words."""
    # "I\u2019ve" is one word, as "I've" is
    return any(w not in _DISCOURSE for w in tokenize(sentence.replace("\u2019", "'")))


def classify(sentence: str) -> tuple[str, str, bool]:
    """(class, about, protected) of one sentence by surface rules."""
    first = bool(_FIRST.search(sentence))
    if _PAST.search(sentence):
        return "past", "past", False
    if _OTHER_START.match(sentence) and not _SUBJ_FIRST.search(sentence):
        return "other", "other", False
    if _OTHER_ANY.search(sentence) or _REPORTED.search(sentence):
        return "other", "other", False
    if _THIRD_PARTY.search(sentence) and _THIRD_SUBJ.search(sentence) and not re.search(r"\band i\b", sentence, re.I):
        # "I'm writing a profile of my friend Julia. They rode ..." - someone else's habit, framed by the user.
        return "other", "other", False
    if re.match(r"\s*(they|he|she)\b", sentence, re.IGNORECASE):
        return "other", "other", False
    if _REQUEST.match(sentence) or (sentence.rstrip().endswith("?") and not _SUBJ_FIRST.search(sentence)):
        # A request still tells something (e.g. "my landlord"), but only for the next few turns.
        return "request", "user", False
    if first and (_EVENT.search(sentence) or (_OCCASION.search(sentence) and not _HABIT.search(sentence))):
        # An explicit event stays true of its occasion whatever the user does later, so it is protected from
        # decay (paper B.3): LoCoMo's questions are mostly about such one-off happenings, and an unprotected
        # hypothesis is pruned after ~80 unrelated turns. A habit stated in the past tense ("went to a gig
        # every weekend") is a trait and stays an unprotected statement, free to drift.
        return "event", "user", True
    return "statement", "user", False


class RuleAgents:
    """Deterministic offline sub-agents."""

    name = "rule"

    def extract(self, text: str, max_props: int, split_min_words: int) -> list[Proposition]:
        """Store the observation whole when short, else its sentences; each sentence classified by rules."""
        text = " ".join(text.split())
        if not text:
            return []
        if len(text.split()) <= split_min_words:
            parts = [text]
        else:
            # Very short fragments ("Thanks!", "Ok.") carry nothing to remember on their own.
            parts = [s for s in split_sentences(text) if len(s.split()) >= 3] or [text]
        # An opener alone would become a belief that every later opener "supports" and every question recalls.
        parts = [p for p in parts if says_something(p)]
        props = []
        for part in parts[:max_props]:
            cls, about, protected = classify(part)
            conf = 0.5 if _STRONG.search(part) else 0.46
            props.append(Proposition(part, cls, about, conf, protected))
        return props

    def targets(
        self,
        regime: Regime,
        prop: Proposition,
        cands: list[Candidate],
        support: float,
        contra: float,
        related: float | None = None,
    ) -> list[Target]:
        """MAINTAIN: supported, uncontradicted beliefs about the same subject; CORRECT: contradicted ones.

        Support is graded: a paraphrase (similarity >= ``support``) supports in full; a belief on the same
        topic (similarity >= ``related``) that the observation does not contradict gets a partial support
        rising linearly from 0 at ``related`` to 1 at ``support``. This emulates the abstraction an LLM
        sub-agent does ("Can I nap in the car before the airport run?" is evidence for "Recommend earplugs
        for daytime naps" although no paraphrase). Someone else's behaviour or the user's distant past never
        reinforces or corrects what is believed about the user now; requests never correct anything.
        """
        if regime == "MAINTAIN" or regime == "PROFILE":
            lo = support if related is None else min(related, support)
            out = []
            for c in cands:
                if c.about != prop.about or c.similarity < lo or c.contradiction >= contra:
                    continue
                s = 1.0 if c.similarity >= support else (c.similarity - lo) / max(support - lo, 1e-9)
                if s > 0.0:
                    out.append(Target(c.id, float(s)))
            return out
        if prop.about != "user" or prop.cls == "request":
            return []
        return [Target(c.id, c.contradiction) for c in cands if c.about == "user" and c.contradiction >= contra]
