"""Text lints: errors a reader notices in a generated dialogue, each with the turns (``persona:turn``) or items
(``qa_id``) it was found at. ``dimobench audit`` gates on their total (none allowed).

- ``unfilled_slot``: a ``{slot}`` left in any text;
- ``foreign_home_city``: the user calls a catalog city other than their own home;
- ``city_mismatch``: the user names a catalog city other than their own as where they are ("a cafe near me in
  Lyon", "the gym here in Oslo", "our local market in Pune");
- ``pronoun_clash``: a person of known gender (the catalog's ``genders``, or a relation such as "sister") is
  followed in the same sentence by a pronoun of the other gender ("Omar just moved into her new place"), or given
  an occasion of the other gender ("Mandla's hen weekend" for a man);
- ``time_clash``: a clock time outside the hours a time-of-day word next to it names ("sunrise hike at 19:30");
- ``money_without_currency``: an amount after a money word with no currency ("I've got 12 in my savings");
- ``number_reply_mismatch``: the user asks about N of a unit and the reply converts a different number of it
  ("Convert 4 miles" answered "... so 5 miles is about 8 kilometres");
- ``profile_conflict``: the persona holds a trait its occupation or age does not fit (``TraitEntry.requires``,
  ``min_age``), or a
  student's age, or words of study (lectures, essays, a thesis) about the user's own life for a persona who is
  not a student;
- ``decoy_timeline``: a "long ago" decoy recalls a state the persona holds inside the suite's span;
- ``social_circle``: a persona's user turns name more people than its circle holds: besides its recorded
  entities, more first names than ``profile["friends"]`` lists (or any name outside that list), or, without a
  recorded circle, more than the catalog's ``friend_circle`` allows (:data:`DEFAULT_CIRCLE` without one). A name
  that is also a word of the suite ("Will", "Ivy"), one inside a longer proper noun ("Big Ben"), one the
  catalog's own texts spell out ("How did Henry's break with Rome happen?") and one said in a single turn only
  ("a book on Henry VIII") are not counted;
- ``season_clash``: a user turn with a seasonal word (snow, a heatwave, conkers, the clocks going back:
  ``dimobench.catalog.SEASONAL``) in a month it does not fit, by the turn's timestamp;
- ``hour_clash``: a user turn with an hour-bound phrase (getting ready for bed told as happening now, "before
  anyone is up", a present-tense "this afternoon": ``dimobench.catalog_patterns.HOURLY``) at an hour it does not fit;
- ``state_clash``: a cue or filler turn (or its reply) saying a word that a state the persona holds then
  excludes (``StateEntry.excludes``: cheese from a vegan, a pint from a teetotaller), the cue's own trait and a
  trait in mid-drift aside (``LatentPlan.barred``);
- ``occasion_retold``: one occasion (an act context with a day, time, month, price, count or friend of its own,
  or one that claims a first: ``dimobench.catalog.ONE_OFF``; any context of a ``once`` act) told in a second turn
  of the same persona ("my great-uncle's wake is on Monday", later "... on Tuesday"; "Got my first one-star
  review" twice; the same watch bought three times);
- ``part_clash``: a persona's cues of one trait name two values of a fixed part (``StateEntry.fixed_parts``):
  "our son" and, later, "our daughter" for the one toddler.

``profile_conflict`` also covers the household table: a recorded relation that one of the persona's traits
excludes (``TraitEntry.excludes_relations``) or that the persona is too old to have (``relation_max_age``), and
two states the persona holds at one time that the catalog says one person cannot (``Catalog.clashes``).
"""

from __future__ import annotations

import re

from dimobench.catalog import (
    Catalog,
    at_hour,
    in_season,
    occasion_gender_clash,
    relation_gender,
    suite_catalog,
    template_pattern,
)
from dimobench.suite.load import Suite
from dimobench.suite.plan import LatentPlan, clashing
from dimobench.suite.schema import Turn

_SLOT = re.compile(r"\{[a-z_0-9]+(?::[a-z]+)?\}")
_HOME = ("here in ", "i live in ", "back home in ", "living in ", "home in ")
_SENTENCE = re.compile(r"[^.!?]+[.!?]?")
_PRONOUN = re.compile(r"\b(he|him|his|himself|she|her|hers|herself)\b")
_PRONOUN_GENDER = {"he": "m", "him": "m", "his": "m", "himself": "m", "she": "f", "her": "f", "hers": "f",
                   "herself": "f"}
_CLOCK = re.compile(r"\b([01]?\d|2[0-3])[:.]([0-5]\d)\b")
_HOURS = (("sunrise", 4, 9), ("dawn", 4, 8), ("breakfast", 4, 11), ("morning", 4, 11), ("lunchtime", 11, 14),
          ("afternoon", 12, 18), ("sunset", 16, 22), ("dusk", 16, 22), ("evening", 17, 23), ("dinner", 17, 23),
          ("midnight", 22, 2))
_MONEY = re.compile(r"\b(?:spent|spend|costs?|paid|pay|saved|save|budget of|owe|owed|earn|earned|priced at|"
                    r"worth|charge[ds]?|fee of|rent is|rent of)\s+(?:about |around |nearly |over |under |only "
                    r")?(\d+(?:[.,]\d+)?)(?![.,]?\d|\s*%|\s*per ?cent)"
                    r"(?=\s*(?:[.,;:!?]|$)|\s+(?:for|on|in|towards?|a|an|per|each|last|this|"
                    r"and|so|but|to|from|at|into|off|already|upfront|up front)\b)"
                    r"|(?<![£$€¥₹\w])(\d+(?:[.,]\d+)?) in (?:my |the )?(?:\w+ )?(?:savings|account|bank|wallet|pot)\b")
"""An amount after a money word that a noun does not follow ("paid 35 for a ticket", not "saved 12 songs")."""
_UNIT_NUMBER = re.compile(r"\b(\d+(?:\.\d+)?)\s*(miles?|km|kilometres?|kilograms?|kg|pounds?|lbs?|cups?|ounces?|"
                          r"oz|litres?|liters?|gallons?|feet|foot|metres?|meters?|inches|celsius|fahrenheit)\b")
_CONVERTED = re.compile(_UNIT_NUMBER.pattern + r"\s+(?:is|are|equals|makes|comes to|works out)")
_LOCAL = re.compile(r"\b(?:near me|nearby|near here|local|here in|round here|around here|in town|my area|"
                    r"my neighbourhood|my neighborhood|i live|our)\b")
_STUDY = re.compile(r"\b(lectures?|seminars?|my essay|this essay|dissertation|my thesis|coursework|my professor|"
                    r"term paper)\b")
STUDENT_MAX_AGE = 35
_SAME_UNIT = {"mile": "mile", "miles": "mile", "km": "km", "kilometre": "km", "kilometres": "km", "kg": "kg",
              "kilogram": "kg", "kilograms": "kg", "pound": "lb", "pounds": "lb", "lb": "lb", "lbs": "lb"}

KINDS = ("unfilled_slot", "foreign_home_city", "city_mismatch", "pronoun_clash", "time_clash",
         "money_without_currency", "number_reply_mismatch", "profile_conflict", "decoy_timeline", "social_circle",
         "season_clash", "hour_clash", "state_clash", "occasion_retold", "part_clash")
DEFAULT_CIRCLE = 8
"""Most friends (people besides its recorded entities) a persona may name when neither it nor the catalog
records a circle."""
_CAPITAL = re.compile(r"\b[A-Z][a-z]+\b")
_LOWER = re.compile(r"\b[a-z]+\b")
_NEXT_CAPITAL = re.compile(r"(?:'s)? [A-Z]")


def lints(suite: Suite, catalog: Catalog | None = None) -> dict[str, list[str]]:
    """``kind -> locations`` of every lint of the module docstring (every kind present, maybe empty)."""
    catalog = catalog or suite_catalog(suite.manifest.config)
    out: dict[str, list[str]] = {k: [] for k in KINDS}
    personas = {p.persona_id: p for p in suite.personas}
    cities = sorted((c.lower() for c in catalog.cities), key=len, reverse=True)
    # case-sensitive on the text as written: "a cork mat" is not Cork
    names = sorted(catalog.cities, key=len, reverse=True)
    city_re = re.compile(r"\b(" + "|".join(re.escape(c) for c in names) + r")\b") if names else None
    genders = _known_genders(suite, catalog)
    schedules = {sc.persona_id: sc for sc in suite.schedules}  # imported suites have none
    plans = {p.persona_id: LatentPlan(p, schedules[p.persona_id]) for p in suite.personas if p.persona_id in schedules}
    for t in suite.dialogues:
        where = f"{t.persona_id}:{t.turn}"
        persona = personas.get(t.persona_id)
        home = str(persona.profile.get("city", "")).lower() if persona else ""
        said = t.user.lower()
        if _SLOT.search(t.user) or _SLOT.search(t.assistant):
            out["unfilled_slot"].append(where)
        for lead in _HOME:
            i = said.find(lead)
            if i >= 0 and any(said.startswith(c, i + len(lead)) and c != home for c in cities):
                out["foreign_home_city"].append(where)
                break
        if city_re is not None and any(_LOCAL.search(sentence.lower()) and any(m.group(1).lower() != home
                                                                               for m in city_re.finditer(sentence))
                                       for sentence in _SENTENCE.findall(t.user)):
            out["city_mismatch"].append(where)
        gendered = genders.get(t.persona_id, {})
        if _pronoun_clash(t.user, gendered) or occasion_gender_clash(t.user, gendered):
            out["pronoun_clash"].append(where)
        if _time_clash(said):
            out["time_clash"].append(where)
        month = t.timestamp[5:7] if t.timestamp else ""
        if month.isdigit() and not in_season(t.user, int(month)):
            out["season_clash"].append(where)
        hour = t.timestamp[11:13] if t.timestamp else ""
        if hour.isdigit() and not at_hour(t.user, int(hour)):
            out["hour_clash"].append(where)
        if _MONEY.search(said):
            out["money_without_currency"].append(where)
        if _number_mismatch(said, t.assistant.lower()):
            out["number_reply_mismatch"].append(where)
        own = t.annotation is None or t.annotation.kind in ("cue", "filler")  # chatter is about others
        occupation = str(persona.profile.get("occupation", "")) if persona else ""
        if own and persona and _STUDY.search(said) and not _is_student(catalog, occupation):
            out["profile_conflict"].append(where)
        a = t.annotation
        plan = plans.get(t.persona_id)
        if a and a.kind == "decoy" and a.trait_id and plan and a.state_id in plan.held_states(a.trait_id):
            out["decoy_timeline"].append(where)
        barred = plan.barred(catalog, t.turn, a.trait_id if a and a.kind == "cue" else None) if own and plan else None
        if barred is not None and barred.found_in(f"{t.user} {t.assistant}"):
            out["state_clash"].append(where)
    clash = clashing(catalog)
    for p in suite.personas:
        occupation = str(p.profile.get("occupation", ""))
        tags = set(catalog.occupation_tags.get(occupation, ()))
        known = _trait_ids(catalog)
        needs = {tag for tr in p.traits if tr.trait_id in known for tag in catalog.trait(tr.trait_id).requires}
        age = p.profile.get("age")
        student_too_old = _is_student(catalog, occupation) and isinstance(age, int) and age > STUDENT_MAX_AGE
        too_young = isinstance(age, int) and any(age < catalog.trait(tr.trait_id).min_age
                                                 for tr in p.traits if tr.trait_id in known)
        ids = [tr.trait_id for tr in p.traits]
        bad_relation = any(not catalog.relation_fits(e.relation, ids, age if isinstance(age, int) else None)
                           for e in p.entities)
        plan = plans.get(p.persona_id)
        held_clash = plan is not None and any(clash.get((tid, st), set()) & set(now.items())
                                              for _, now in plan.held_together() for tid, st in now.items())
        if (needs - tags) or student_too_old or too_young or bad_relation or held_clash:
            out["profile_conflict"].append(p.persona_id)
    out["social_circle"] = _circle_breaches(suite, catalog)
    own_turns = [t for t in suite.dialogues if t.annotation is None or t.annotation.kind in ("cue", "filler")]
    out["occasion_retold"] = _retold(own_turns, catalog)
    out["part_clash"] = _part_clashes(own_turns, catalog)
    for q in suite.qa:
        if _SLOT.search(q.question) or any(_SLOT.search(o) for o in q.options):
            out["unfilled_slot"].append(q.qa_id)
    return out


def _retold(turns: list[Turn], catalog: Catalog) -> list[str]:
    """Turns of a persona that tell an occasion it told before (the ``occasion_retold`` lint). An act's contexts
    with an occasion's slots tell one occasion in other words, so any two of them count as a retelling."""
    if catalog.text_rules != "v3":
        return []
    acts = [a for tp in catalog.topics for tr in tp.traits for st in tr.states for a in st.acts] + catalog.filler_acts
    patterns = [(n, *template_pattern(c)) for n, a in enumerate(acts) for c in a.context if a.occasion(c)]
    told: dict[str, set[int]] = {}
    found = []
    for t in turns:
        said = t.user.lower()
        occasions = {n for n, literal, pattern in patterns if literal in said and pattern.search(t.user)}
        before = told.setdefault(t.persona_id, set())
        if occasions & before:
            found.append(f"{t.persona_id}:{t.turn}")
        before |= occasions
    return found


def _part_clashes(turns: list[Turn], catalog: Catalog) -> list[str]:
    """Cue turns naming another value of a fixed part than the persona's earlier cues of that trait did
    (``part_clash``; other topics may say "a Japanese knife" without the language learnt being Japanese)."""
    groups = [(tr.trait_id, [re.compile(rf"\b{re.escape(v)}\b", re.IGNORECASE) for v in st.parts[name]])
              for tp in catalog.topics for tr in tp.traits for st in tr.states for name in st.fixed_parts]
    first: dict[tuple[str, int], int] = {}
    found = []
    for t in turns:
        a = t.annotation
        for g, (trait_id, values) in enumerate(groups):
            if a is None or a.kind != "cue" or a.trait_id != trait_id:
                continue
            said = [n for n, v in enumerate(values) if v.search(t.user)]
            if said and first.setdefault((t.persona_id, g), said[0]) not in said:
                found.append(f"{t.persona_id}:{t.turn}")
    return found


def _circle_breaches(suite: Suite, catalog: Catalog) -> list[str]:
    """Personas naming more friends than their circle holds (the ``social_circle`` lint)."""
    words = {w for t in suite.dialogues for text in (t.user, t.assistant) for w in _LOWER.findall(text)}
    names = {n for n in catalog.first_names if n.lower() not in words} - _literal_names(catalog)
    turns_naming: dict[tuple[str, str], int] = {}
    for t in suite.dialogues:
        for n in _people(t.user, names):
            turns_naming[(t.persona_id, n)] = turns_naming.get((t.persona_id, n), 0) + 1
    # a friend comes back; a name said in one turn only is more often Henry VIII or a shop called Zara
    said: dict[str, set[str]] = {}
    for (pid, n), k in turns_naming.items():
        if k >= 2:
            said.setdefault(pid, set()).add(n)
    out = []
    for p in suite.personas:
        known = {p.name.split()[0], *(e.name for e in p.entities)}
        friends = p.profile.get("friends")
        others = said.get(p.persona_id, set()) - known
        if isinstance(friends, list):
            breach = bool(others - {str(f) for f in friends})
        else:
            breach = len(others) > (catalog.friend_circle[1] if catalog.friend_circle else DEFAULT_CIRCLE)
        if breach:
            out.append(p.persona_id)
    return out


def _literal_names(catalog: Catalog) -> set[str]:
    """First names the catalog's own texts spell out ("How did Henry's break with Rome happen?"): the same in every
    persona's dialogue, never a person of its circle (a friend comes from a slot)."""
    found: set[str] = set()
    names = set(catalog.first_names)
    stack: list[tuple[object, bool]] = [(catalog.model_dump(), False)]
    while stack:
        item, said = stack.pop()  # said: inside what a user says (an exchange's "user", an act's "context")
        if isinstance(item, dict):
            stack.extend((v, said or k in ("user", "context")) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, said) for v in item)
        elif said and isinstance(item, str):
            found |= _people(_SLOT.sub("someone", item), names)  # "Sarah Vaughan's Misty" names no Sarah
    return found


def _people(text: str, names: set[str]) -> set[str]:
    """First names in ``text`` used as a person's name: a name inside a longer proper noun ("Big Ben", "the Union
    Jack", "St Peter's Basilica") is a place or a thing."""
    found = set()
    for m in _CAPITAL.finditer(text):
        words, after = text[:m.start()].split(), text[m.end():]
        prev = words[-1] if words else ""
        # "Told Maya": the word before opens the sentence, so its capital says nothing
        opens = len(words) == 1 or (len(words) > 1 and words[-2].endswith((".", "!", "?", ":")))
        inside = (prev[:1].isupper() and not prev.endswith((".", "!", "?", ":")) and not opens) or bool(
            _NEXT_CAPITAL.match(after))
        if m.group(0) in names and not inside:
            found.add(m.group(0))
    return found


def _trait_ids(catalog: Catalog) -> set[str]:
    return {tr.trait_id for tp in catalog.topics for tr in tp.traits}


def _is_student(catalog: Catalog, occupation: str) -> bool:
    return "student" in catalog.occupation_tags.get(occupation, ()) or "student" in occupation.lower()


def _known_genders(suite: Suite, catalog: Catalog) -> dict[str, dict[str, str]]:
    """Per persona: lower-cased first name -> gender, from the catalog's genders and gendered relations."""
    base = {n.lower(): g for n, g in catalog.genders.items()}
    out: dict[str, dict[str, str]] = {}
    for p in suite.personas:
        mine = dict(base)
        for e in p.entities:
            gender = relation_gender(e.relation)
            if gender:
                mine[e.name.lower()] = gender
        out[p.persona_id] = mine
    return out


def _pronoun_clash(text: str, genders: dict[str, str]) -> bool:
    if not genders:
        return False
    for sentence in _SENTENCE.findall(text):
        low = sentence.lower()
        # "Meera's brother ... he": a pronoun after a possessive names the possessed, so possessives are skipped
        named = [(m.start(), genders[m.group(0)]) for m in re.finditer(r"[a-z]+(?!'s)\b", low)
                 if m.group(0) in genders and sentence[m.start()].isupper()]
        if len({g for _, g in named}) != 1:
            continue  # no one, or people of both genders: the pronoun may be either's
        start, gender = named[0]
        pronoun = _PRONOUN.search(low, start)
        if pronoun and _PRONOUN_GENDER[pronoun.group(1)] != gender:
            return True
    return False


def _time_clash(said: str) -> bool:
    clocks = list(_CLOCK.finditer(said))
    if len(clocks) != 1 or re.search(r"\b(?:am|pm|a\.m\.|p\.m\.)\b", said):
        return False
    hour = int(clocks[0].group(1))
    near = said[max(0, clocks[0].start() - 40):clocks[0].end() + 40]  # about five words either side
    for word, first, last in _HOURS:
        if re.search(rf"\b{word}\b", near):
            def inside(h: int, first: int = first, last: int = last) -> bool:
                return first <= h <= last if first <= last else (h >= first or h <= last)
            # "this evening at 7:30" is a twelve-hour clock, so 7 may mean 19
            if not inside(hour) and not (hour <= 12 and inside(hour + 12)):
                return True
    return False


def _number_mismatch(user: str, reply: str) -> bool:
    asked = {(_SAME_UNIT.get(u, u), n) for n, u in _UNIT_NUMBER.findall(user)}
    if len(asked) != 1:
        return False
    (unit, number), = asked
    converted = {n for n, u in _CONVERTED.findall(reply) if _SAME_UNIT.get(u, u) == unit}
    return bool(converted) and number not in converted
