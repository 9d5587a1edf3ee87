"""The rules a catalog must keep to generate readable, implicit dialogues (docs/catalog.md): slots, explicit
change phrases, duplicates, and the validity rules' wording (``word_problems``)."""

from __future__ import annotations

import re

from dimobench.catalog import (
    CONFOUNDER_SLOTS,
    EXPLICIT_CHANGE,
    SLOTS,
    TYPED_SLOTS,
    Catalog,
    Exchange,
    TopicEntry,
    barred_pattern,
    content_words,
    slot_names,
    slot_specs,
    stemmed_words,
)

MIN_RETELLABLE = 14
"""Contexts that are not occasions (:meth:`Act.occasion`) a state written as acts keeps. A persona holds a state
for up to ~60 cue turns of an XL suite; once its untold contexts are spent the renderer retells the retellable
ones, and a state with five left told "My Goodyear-welted boots came from Northampton" 14 times (session 24's
review); with 8-15 left an XL persona still asked one question 11 times (session 26, which added two retellable
acts to every catalog-v3 state: 14 is the fewest any state has since)."""


def check_topic(tp: TopicEntry) -> list[str]:
    """Return every rule one topic file breaks."""
    problems: list[str] = []
    for ex in tp.chatter:
        problems += _bad_slots(f"{tp.topic_id} chatter", ex, SLOTS)
    for tr in tp.traits:
        where = f"{tp.topic_id}/{tr.trait_id}"
        state_words = set().union(*(content_words(s.description) for s in tr.states))
        for q in tr.current_questions + tr.inference_questions + tr.past_questions + [tr.label]:
            leaked = content_words(q) & state_words
            if leaked:
                problems.append(f"{where}: question {q!r} uses state words {sorted(leaked)}")
            if slot_names(q) - {"name"}:
                problems.append(f"{where}: question {q!r} may only use the {{name}} slot")
        for st in tr.states:
            allowed = SLOTS | TYPED_SLOTS | frozenset(st.parts)
            for ex in st.cues:
                problems += _bad_slots(f"{where}/{st.state_id} cue", ex, SLOTS)
            for act in st.acts:
                for ex in act.asks:
                    problems += _bad_slots(f"{where}/{st.state_id} act", ex, allowed)
                problems += [f"{where}/{st.state_id} act: unknown slots {sorted(slot_names(c) - allowed)} in {c!r}"
                             for c in act.context if slot_names(c) - allowed]
            for said in st.cue_texts():
                low = f" {said.lower()} "
                if st.state_id.replace("_", " ").lower() in low:
                    problems.append(f"{where}/{st.state_id}: cue {said!r} names its state")
                explicit = [w for w in EXPLICIT_CHANGE if w in low]
                if explicit:
                    problems.append(f"{where}/{st.state_id}: cue {said!r} states a change {explicit}")
            if len({ex.user for ex in st.cues}) < len(st.cues):
                problems.append(f"{where}/{st.state_id}: duplicate cue user texts")
            options = st.answers + st.recommendations
            barred = barred_pattern(frozenset(st.excludes))
            own = [st.description, *options, *st.habits, *st.cue_texts(), *(r for act in st.acts for a in act.asks
                                                                              for r in a.replies()),
                   *(c.assistant for c in st.cues), *(v for vs in st.parts.values() for v in vs)]
            excluded = sorted({m.group(0).lower() for t in own for m in (barred.finditer(t) if barred else ())})
            if excluded:
                problems.append(f"{where}/{st.state_id}: its own texts say words it excludes {excluded}")
            if len({o.lower() for o in options}) < len(options):
                problems.append(f"{where}/{st.state_id}: duplicate option texts")
            retellable = sum(not act.occasion(c) for act in st.acts for c in act.context)
            if st.acts and retellable < MIN_RETELLABLE:
                problems.append(f"{where}/{st.state_id}: its acts leave {retellable} contexts that may be told "
                                f"again, not occasions nor in 'once' acts (at least {MIN_RETELLABLE})")
    return problems


def check_catalog(cat: Catalog) -> list[str]:
    """Return every rule the catalog breaks (empty when it is fit to generate from)."""
    problems: list[str] = []
    for tp in cat.topics:
        problems += check_topic(tp)
    for kind, items, extra in (("filler", cat.filler, frozenset()), ("entity", cat.entity, CONFOUNDER_SLOTS),
                               ("decoy", cat.decoy, CONFOUNDER_SLOTS)):
        for ex in items:
            problems += _bad_slots(kind, ex, SLOTS | extra)
    for act in cat.filler_acts:
        for ex in act.asks:
            problems += _bad_slots("filler act", ex, SLOTS | TYPED_SLOTS)
        problems += [f"filler act: unknown slots in {c!r}" for c in act.context if slot_names(c) - SLOTS - TYPED_SLOTS]
    if cat.text_rules == "v3":
        problems += [f"names: first name {n!r} has no recorded gender" for n in cat.first_names if n not in cat.genders]
        problems += [f"names: city {c!r} has no currency" for c in cat.cities if c not in cat.currencies]
        problems += [f"names: home city {c!r} is not a city" for c in cat.home_cities if c not in cat.cities]
        problems += [f"names: occupation {o!r} has no tags" for o in cat.occupations if o not in cat.occupation_tags]
    if cat.friend_circle and not (len(cat.friend_circle) == 2 and 2 <= cat.friend_circle[0] <= cat.friend_circle[1]):
        problems.append(f"templates: friend_circle {cat.friend_circle} is not [fewest, most] with fewest >= 2")
    for text in _texts(cat):
        problems += [f"templates: {{{name}:{spec}}} in {text!r} is not a price band of price_bands"
                     for name, spec in slot_specs(text) if name != "price" or spec not in cat.price_bands]
    states = {f"{tr.trait_id}:{st.state_id}" for tp in cat.topics for tr in tp.traits for st in tr.states}
    problems += [f"names: clash {a!r} x {b!r} is not two states of two traits" for a, b, _ in cat.clashes
                 if a not in states or b not in states or a.split(":")[0] == b.split(":")[0]]
    known = set(cat.relations)
    problems += [f"names: relation_max_age names {r!r}, which is not a relation" for r in cat.relation_max_age
                 if r not in known]
    problems += [f"{tp.topic_id}: {tr.trait_id} excludes {r!r}, which is not a relation" for tp in cat.topics
                 for tr in tp.traits for r in tr.excludes_relations if r not in known]
    for lead in cat.leads + cat.trial_leads:
        said = f" {lead.lower()} "
        if slot_names(lead) or lead[-1:] not in ".!:" or any(w in said for w in EXPLICIT_CHANGE):
            problems.append(f"templates: lead {lead!r} has a slot, a change phrase or no closing . ! :")
    return problems


def _texts(cat: Catalog) -> list[str]:
    """Every template string of the catalog (both sides of each exchange, every act's contexts and asks)."""
    exchanges = [*cat.filler, *cat.entity, *cat.decoy, *(ex for a in cat.filler_acts for ex in a.asks)]
    contexts = [c for a in cat.filler_acts for c in a.context]
    for tp in cat.topics:
        exchanges += tp.chatter
        for tr in tp.traits:
            for st in tr.states:
                exchanges += st.cues + [ex for a in st.acts for ex in a.asks]
                contexts += [c for a in st.acts for c in a.context]
    return contexts + [t for ex in exchanges for t in (ex.user, *ex.replies())]


def _bad_slots(where: str, ex: Exchange, allowed: frozenset[str]) -> list[str]:
    unknown = (slot_names(ex.user) | {n for r in ex.replies() for n in slot_names(r)}) - allowed
    return [f"{where}: unknown slots {sorted(unknown)} in {ex.user!r}"] if unknown else []


def _words(text: str) -> set[str]:
    return set(stemmed_words(re.sub(r"\{[^}]*\}", " ", text)))


def word_problems(topic: TopicEntry, with_cues: bool = False) -> list[str]:
    """The validity rules' wording problems of one topic: fewer than four states, an option sharing a stemmed
    content word with its own state's cue texts or parts, and (always for composed acts, for fixed cues with
    ``with_cues``) a cue text or part sharing one with its state's description."""
    out: list[str] = []
    for trait in topic.traits:
        if len(trait.states) < 4:
            out.append(f"{trait.trait_id}: {len(trait.states)} states (needs 4)")
        for state in trait.states:
            cue_words: set[str] = set()
            for text in state.cue_texts():
                cue_words |= _words(text)
            for values in state.parts.values():
                for value in values:
                    cue_words |= _words(value)
            for pool in ("answers", "recommendations"):
                for text in getattr(state, pool):
                    shared = _words(text) & cue_words
                    if shared:
                        out.append(f"{trait.trait_id}/{state.state_id} {pool} {text!r} shares "
                                   f"{sorted(shared)} with its cues")
            desc = _words(state.description)
            if with_cues or state.acts:
                for text in state.cue_texts() + [v for vs in state.parts.values() for v in vs]:
                    shared = _words(text) & desc
                    if shared:
                        out.append(f"{trait.trait_id}/{state.state_id} cue {text!r} shares "
                                   f"{sorted(shared)} with the description")
    return out
