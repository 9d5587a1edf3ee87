"""The offline generator's catalog: topics, traits, states and templates under ``data/``.

Every file is JSON so the catalog loads in milliseconds. Templates may use the slots in :data:`SLOTS`
(``{friend}``, ``{weekday}``, ...); entity and decoy templates also use ``{relation}``, ``{entity}`` and
``{habit}`` (a past-tense verb phrase from the state being shown). ``check_catalog`` enforces the rules a
benchmark needs (in :mod:`dimobench.catalog_rules`): enough templates per state, no state words in questions or
cues."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, PrivateAttr, model_validator

from dimobench.catalog_patterns import (  # noqa: F401  (re-exported: the catalog's text rules)
    LONG_HELD,
    MONTHS,
    NAMES_THE_USER,
    ONE_OFF,
    SEASONAL,
    STOP_WORDS,
    WEEKDAYS,
    BarredWords,
    at_hour,
    barred_pattern,
    barred_words,
    content_words,
    in_season,
    occasion_gender_clash,
    slot_names,
    slot_specs,
    stemmed_words,
    tells_one_off,
    template_pattern,
)
from dimobench.resources import resource_dir

SLOTS: frozenset[str] = frozenset({"friend", "friend2", "weekday", "time_of_day", "clock", "city", "number",
                                   "month", "name", "someone"})
"""Slots every template may use; ``name`` is the persona's first name, the rest come from the catalog
(``someone``, catalog-v3: an unnamed person whose gender no value fixes, "a neighbour", "my cousin"; at a text's
start, which is capitalised, or inside a sentence, never after a sentence's end)."""

TYPED_SLOTS: frozenset[str] = frozenset({"price", "friend_their", "friend_them", "friend_he", "past_month",
                                         "later_month"})
"""Slots a catalog with ``text_rules`` v3 fills from the persona's record: ``{price}`` an amount in the currency of
the persona's city; the pronouns of ``{friend}`` from the catalog's recorded gender of that name
(``friend_he`` is he/she, ``friend_them`` him/her, ``friend_their`` his/her); ``{past_month}`` and
``{later_month}`` three months before and after the turn's (``{month}`` is the turn's own: "since {past_month}",
"by {later_month}", never "before March" written in March)."""

CONFOUNDER_SLOTS: frozenset[str] = frozenset({"relation", "entity", "habit"})
"""Extra slots for entity-confounder and temporal-decoy templates."""

FEMALE_RELATIONS = frozenset("sister mum mom mother aunt grandmother grandma daughter wife niece stepsister "
                             "girlfriend".split())
MALE_RELATIONS = frozenset("brother dad father uncle grandfather grandpa son husband nephew stepbrother "
                           "boyfriend".split())
"""Relation words that fix a person's gender (a catalog with ``text_rules`` v3 gives them a name of it)."""


def relation_gender(relation: str) -> str | None:
    """``f`` or ``m`` when a relation ("sister", "brother-in-law") fixes its person's gender, else None."""
    words = set(relation.lower().replace("-", " ").split())
    return "f" if words & FEMALE_RELATIONS else "m" if words & MALE_RELATIONS else None

EXPLICIT_CHANGE: tuple[str, ...] = (
    " anymore", " nowadays", " used to ", " no longer ", " changed ", "i've become", "i have become",
    " these days", " i now ",
)
"""Phrases that announce a change outright; cue turns must show a state through behaviour instead."""


class Exchange(BaseModel):
    """One user utterance and the assistant's reply to it."""

    user: str
    """What the user says (first person; may use slots)."""
    assistant: str
    """A reply that answers the user turn."""
    also: list[str] = []
    """Other replies that answer it as well (catalog v3 acts): a persona hears the one it has heard least recently,
    so an XL dialogue that asks the same thing again is not answered word for word again (session 29: 77% of an XL
    suite's cue turns had a reply the persona had already heard)."""

    def replies(self) -> list[str]:
        """Every reply to the user turn: ``assistant``, then ``also``."""
        return [self.assistant, *self.also]


MIN_FIXED_CUES = 20
MIN_ACTS = 8
"""A state shows itself through at least this many fixed cue exchanges, or at least this many composed acts."""


class Act(BaseModel):
    """A composed cue: one of ``context`` (something the user does, plans, buys or asks about, first person)
    followed by one of ``asks`` (a question that follows from it, with a reply that answers it). Any context goes
    with any ask, and the renderer may put one of the catalog's ``leads`` in front, so one act has many surface
    forms; slots may name the state's ``parts`` as well as :data:`SLOTS` and :data:`TYPED_SLOTS`."""

    context: list[str] = Field(min_length=2)
    asks: list[Exchange] = Field(min_length=2)
    once: bool = False
    """Every context tells the same occasion, one that a person does not live twice in a few months (buying the
    watch a persona keeps, commissioning a table): once one is told, the persona tells none of them again. Without
    it only contexts with an occasion's slots or a first (:data:`ONE_OFF`) count as one occasion, and a purchase
    told without a price or a day came back (blind read of seed 2401: the same chronograph bought three times)."""

    group: str = ""
    """Acts of one group tell one happening or curiosity in other words (three smoke-alarm acts): once one is
    told, every act of the group counts as told (blind read of seed 2677: a jury summons received three times)."""

    def occasion(self, context: str) -> bool:
        """Whether ``context`` tells an occasion: a persona tells it once (the renderer and the ``occasion_retold``
        lint apply this to catalogs with ``text_rules`` v3 only)."""
        return self.once or tells_one_off(context)

    def forms(self) -> list[str]:
        """Every user text this act can produce (slots unfilled, no lead)."""
        return [f"{c} {a.user}" for c in self.context for a in self.asks]


class StateEntry(BaseModel):
    """One state a trait can be in, with everything needed to show it and ask about it."""

    state_id: str
    description: str
    """Plain description of the state; benchmark-side, never shown in questions."""
    answers: list[str] = Field(min_length=3)
    """Short option texts that fit this state (for current_state, temporal and stability questions)."""
    recommendations: list[str] = Field(min_length=3)
    """Suggestions that only fit this state (for inference questions)."""
    habits: list[str] = Field(min_length=3)
    """Past-tense verb phrases showing this state, e.g. 'went dancing until 4 every Saturday'."""
    cues: list[Exchange] = []
    """Behavioural cue exchanges: they show the state and never name it."""
    acts: list[Act] = []
    """Composed cues (catalogs from v3 on); a state has :data:`MIN_FIXED_CUES` cues or :data:`MIN_ACTS` acts."""
    parts: dict[str, list[str]] = {}
    """Typed parts only this state's acts use, ``{part}`` in a template (objects, places, companions, ...)."""
    fixed_parts: list[str] = []
    """Parts that name something of the persona's own life (their child, partner, workplace, the language they
    learn): drawn once per persona and kept, so a toddler is not "our son" one week and "our daughter" the next."""
    settled: bool = False
    """A fact of life that months of dialogue do not make or unmake (a partner and young kids): never the start or
    the end of a drift (catalogs from v3 on; seed 2537's blind read met a toddler son who "arrived" over 40 turns)."""
    excludes: list[str] = []
    """Words a user in this state would not say of their own present life (a vegan's "cheese", a teetotaller's
    "pint"; catalogs from v3 on): while a persona holds the state, its other traits' cues and its fillers are
    drawn again when they (or their replies) say one (:func:`barred_pattern`)."""

    @model_validator(mode="after")
    def _shows_itself(self) -> StateEntry:
        if len(self.cues) < MIN_FIXED_CUES and len(self.acts) < MIN_ACTS:
            raise ValueError(f"state {self.state_id}: needs {MIN_FIXED_CUES} cues or {MIN_ACTS} acts")
        if set(self.fixed_parts) - set(self.parts):
            raise ValueError(f"state {self.state_id}: fixed parts {sorted(set(self.fixed_parts) - set(self.parts))} "
                             f"are not among its parts")
        return self

    def cue_texts(self) -> list[str]:
        """Every user-side cue template of this state: fixed cues, then each act's forms."""
        return [c.user for c in self.cues] + [f for a in self.acts for f in a.forms()]


class TraitEntry(BaseModel):
    """An attitude or preference of a persona that may drift between its states."""

    trait_id: str
    label: str
    """A noun phrase for the trait used in temporal questions, e.g. 'free evenings'."""
    states: list[StateEntry] = Field(min_length=2, max_length=4)
    current_questions: list[str] = Field(min_length=3)
    """Templates asking what holds now; use {name}."""
    inference_questions: list[str] = Field(min_length=3)
    """Templates asking for a recommendation or prediction; use {name}."""
    past_questions: list[str] = Field(min_length=2)
    """Templates asking what held before the latest change; use {name}."""
    distractor_answers: list[str] = Field(min_length=3)
    """Plausible answers to current/past questions that fit no state of this trait."""
    distractor_recommendations: list[str] = Field(min_length=3)
    """Plausible suggestions that fit no state of this trait."""
    requires: list[str] = []
    """Occupation tags a persona needs to hold this trait in any of its states (``occupation_tags``; e.g. a
    work-setup trait whose states are all desk jobs requires ``desk``)."""
    min_age: int = 0
    """The youngest a persona holding this trait may be (a state whose cues speak of twenty years at a firm)."""
    excludes_relations: list[str] = []
    """Relations a persona holding this trait never has, whatever state it drifts to (the household table: a
    family trait with a partner-and-young-kids state rules out a flatmate)."""
    background: bool = False
    """A fact of every persona's life (how they get about): a persona that does not hold the trait still lives in
    one of its states, drawn at stage 1 (``profile["background"]``), so what its other turns say stays consistent
    with it (seed 2231: a hybrid worker who took the train in on office days and drove home from night shifts);
    it is never cued or asked, and only its ``excludes`` apply."""


class TopicEntry(BaseModel):
    """A life topic: keywords, chatter about other people or the world, and its traits."""

    topic_id: str
    topic: str
    keywords: list[str] = Field(min_length=6)
    chatter: list[Exchange] = Field(min_length=5)
    """Keyword-matched chatter: uses the topic's words but says nothing about the user."""
    traits: list[TraitEntry] = Field(min_length=1)


class Catalog(BaseModel):
    """The whole offline catalog."""

    topics: list[TopicEntry]
    filler: list[Exchange]
    entity: list[Exchange]
    decoy: list[Exchange]
    slots: dict[str, list[str]]
    """Fillers for weekday, time_of_day, clock, number and month ({friend}, {friend2} and {city} come from
    first_names and cities)."""
    first_names: list[str]
    last_names: list[str]
    cities: list[str]
    occupations: list[str]
    relations: list[str]
    leads: list[str] = []
    """Openers a composed turn may start with ("Quick one.", "Back from town."); they carry no state."""
    trial_leads: list[str] = []
    """Openers for a drift's first cues of its new state ("Trying something different."): a first try, no switch."""
    habit_trial_leads: list[str] = []
    """The trial leads that fit a twist on a habit held for years too ("Small experiment:"), for other cues."""
    filler_acts: list[Act] = []
    """Composed fillers (everyday requests about nothing the benchmark tracks), beside ``filler``."""
    text_rules: Literal["v1", "v3"] = "v1"
    """``v3``: the generator fills :data:`TYPED_SLOTS`, keeps ``{clock}`` inside ``{time_of_day}``, matches
    gendered relations to names, draws occupations that fit the traits (``occupation_tags``) and recalls in
    temporal decoys only states the persona never holds in the suite. ``v1`` (the default, and catalogs v1 and
    v2) keeps the older suites' bytes."""
    genders: dict[str, str] = {}
    """First name -> ``f`` or ``m``, for pronouns and gendered relations (``text_rules`` v3)."""
    occupation_tags: dict[str, list[str]] = {}
    """Occupation -> tags (``desk``: can be done from a laptop; ``on_site``: done at a workplace; ``shifts``: has
    night shifts; ``student``; ...), the compatibility table stage 1 checks a persona's traits against
    (``text_rules`` v3)."""
    home_cities: list[str] = []
    """Cities a persona may live in (default: any of ``cities``); catalog v3 lists the UK ones its British
    texts fit (BBC, the NHS, pounds), and names the others only as trips or news."""
    currencies: dict[str, str] = {}
    """City -> currency symbol or code written before an amount (``text_rules`` v3)."""
    price_scale: dict[str, int] = {}
    """Currency (as written in ``currencies``, spaces stripped) -> local units per pound, dollar or euro, so a
    ``{price}`` of 40 reads "¥6,000" in Tokyo; a currency without an entry is taken at 1."""
    price_bands: dict[str, list[str]] = {}
    """Band -> base amounts for ``{price:BAND}`` (``small``: bus fare, ``big``: sofa; v3); ``{price}``: ``slots``."""
    friend_circle: list[int] = []
    """``[fewest, most]`` friends a persona has (``text_rules`` v3): stage 1 draws that many names into
    ``profile["friends"]``, and every ``{friend}`` is one of them (not forty different friends)."""
    relation_max_age: dict[str, int] = {}
    """Relation -> the oldest a persona may be and still have one ("grandmother": 45)."""
    clashes: list[tuple[str, str, str]] = []
    """``(trait_id:state_id, trait_id:state_id, why)``: two states one person cannot hold at once (stages 1, 2)."""
    conflicts: dict[str, list[tuple[str, str]]] = {}
    """Option text -> (trait_id, state_id) of other traits' states that also support it
    (``data/conflicts.json``, built by ``scripts/build_conflicts.py``)."""

    _excludes: tuple[object, dict[tuple[str, str], tuple[str, ...]]] | None = PrivateAttr(default=None)
    _by_trait: tuple[object, dict[str, tuple[TraitEntry, TopicEntry]]] | None = PrivateAttr(default=None)

    def excludes(self) -> dict[tuple[str, str], tuple[str, ...]]:
        """(trait_id, state_id) -> the words that state excludes, for those that exclude any (as :meth:`_index`)."""
        if self._excludes is None or self._excludes[0] is not self.topics:
            self._excludes = (self.topics, {(t.trait_id, s.state_id): tuple(s.excludes) for tp in self.topics
                                            for t in tp.traits for s in t.states if s.excludes})
        return self._excludes[1]

    def canonical_json(self) -> str:
        """The catalog as compact JSON without the v3 fields left at their defaults, so adding those fields to
        the models kept the v1 and v2 catalogs' bytes (and the fingerprints of the suites made from them)."""
        return json.dumps(_drop_unset_v3(self.model_dump(mode="json")), ensure_ascii=False, separators=(",", ":"))

    def relation_fits(self, relation: str, trait_ids: list[str], age: int | None) -> bool:
        """Whether a persona of ``age`` holding these traits may have someone of ``relation`` (the household table:
        no trait of them excludes it, ``TraitEntry.excludes_relations``, and the persona is not too old for it,
        ``relation_max_age``); traits the catalog does not know exclude nothing."""
        known = self._index()
        if any(relation in known[t][0].excludes_relations for t in trait_ids if t in known):
            return False
        return age is None or age <= self.relation_max_age.get(relation, age)

    def trait(self, trait_id: str) -> TraitEntry:
        """Return the trait with this id."""
        return self._index()[trait_id][0]

    def topic_of(self, trait_id: str) -> TopicEntry:
        """Return the topic holding this trait."""
        return self._index()[trait_id][1]

    def _index(self) -> dict[str, tuple[TraitEntry, TopicEntry]]:
        """Trait id -> (trait, its topic), once per topics list (a model_copy with other topics computes its own)."""
        if self._by_trait is None or self._by_trait[0] is not self.topics:
            self._by_trait = (self.topics, {t.trait_id: (t, tp) for tp in self.topics for t in tp.traits})
        return self._by_trait[1]


_V3_DEFAULTS: dict[str, object] = {
    "acts": [], "parts": {}, "fixed_parts": [], "requires": [], "min_age": 0, "leads": [], "trial_leads": [],
    "habit_trial_leads": [], "filler_acts": [], "text_rules": "v1", "genders": {}, "currencies": {},
    "occupation_tags": {}, "price_scale": {}, "home_cities": [], "excludes_relations": [], "friend_circle": [],
    "relation_max_age": {}, "price_bands": {}, "excludes": [], "background": False, "once": False, "settled": False,
    "also": [], "clashes": [],
}


def _drop_unset_v3(value: object) -> object:
    if isinstance(value, dict):
        return {k: _drop_unset_v3(v) for k, v in value.items() if not (k in _V3_DEFAULTS and v == _V3_DEFAULTS[k])}
    if isinstance(value, list):
        return [_drop_unset_v3(v) for v in value]
    return value


def _load_json(path: Path) -> object:
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def load_catalog(root: str | None = None) -> Catalog:
    """Load the catalog from ``root``, else ``$DIMOBENCH_CATALOG``, else the packaged ``data/`` directory.

    A custom catalog changes every stage fingerprint (its hash is part of them), never the manifest's paths.
    """
    return _load_catalog(catalog_root(root))


def catalog_root(root: str | None = None) -> str:
    """The catalog directory :func:`load_catalog` reads: ``root``, else ``$DIMOBENCH_CATALOG``, else the package's."""
    return root or os.environ.get("DIMOBENCH_CATALOG") or str(resource_dir("data"))


def catalog_record(root: str | None = None) -> str | None:
    """What a suite's manifest records of the catalog it was made from: None for the packaged default (so the
    manifests of default suites keep their bytes), a name such as ``catalog-v2`` for a catalog shipped inside
    the package's ``data/``, else the directory's absolute path."""
    base = Path(catalog_root(root)).resolve()
    packaged = resource_dir("data").resolve()
    if base == packaged:
        return None
    if base.parent == packaged:
        return base.name
    return str(base)


def suite_catalog(config: dict[str, object]) -> Catalog:
    """The catalog a suite was made from, per its manifest ``config`` (``catalog`` as :func:`catalog_record`
    writes it); a suite that records none was made from ``$DIMOBENCH_CATALOG`` or the packaged one.

    Verify, audit, the oracle and the planter read a suite through this, so a suite made from another catalog is
    judged against its own lists whatever the environment says.
    """
    recorded = config.get("catalog")
    if not isinstance(recorded, str) or not recorded:
        return load_catalog()
    path = find_catalog(recorded)
    if path is None:
        from dimobench.errors import InputError

        raise InputError(f"the suite was made from catalog {recorded!r}, which is not there (shipped: "
                         f"{', '.join(shipped_catalogs())})", "manifest.json", field="config.catalog")
    return load_catalog(str(path))


def find_catalog(name: str) -> Path | None:
    """The catalog directory ``name`` means: for a bare name, a catalog shipped in the package's ``data/``
    (``catalog-v2``) before a folder of that name here; for a path, that directory. It must hold ``topics/``;
    None when nothing does."""
    shipped = resource_dir("data") / name
    order = (shipped, Path(name)) if Path(name).name == name else (Path(name),)
    for path in order:
        if (path / "topics").is_dir():
            return path.resolve()
    return None


def shipped_catalogs() -> list[str]:
    """Names of the catalogs shipped inside the package's ``data/`` besides the default."""
    return sorted(p.name for p in resource_dir("data").iterdir() if (p / "topics").is_dir())


@lru_cache(maxsize=4)
def _load_catalog(root: str) -> Catalog:
    base = Path(root)
    topics = [TopicEntry.model_validate(_load_json(p)) for p in sorted((base / "topics").glob("*.json"))]
    templates = _load_json(base / "templates.json")
    names = _load_json(base / "names.json")
    conflicts = _load_json(base / "conflicts.json") if (base / "conflicts.json").is_file() else {}
    assert isinstance(templates, dict) and isinstance(names, dict) and isinstance(conflicts, dict)
    return Catalog(topics=topics, conflicts=conflicts, **templates, **names)
