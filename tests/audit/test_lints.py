"""Each text lint fires on a turn planted with its error, and stays quiet on the same suite without it."""

from __future__ import annotations

import dataclasses
import re

import pytest

from dimobench.audit.lints import KINDS, lints
from dimobench.catalog import Catalog, Exchange, load_catalog
from dimobench.suite.load import Suite, load_suite
from dimobench.suite.schema import Annotation, Entity


@pytest.fixture(scope="module")
def suite(small_suite) -> Suite:
    return load_suite(small_suite)


def _catalog() -> Catalog:
    """The packaged catalog with a few recorded genders, occupation tags and a trait requirement, as v3 has."""
    cat = load_catalog()
    first = cat.topics[0].traits[0]
    topics = [cat.topics[0].model_copy(update={"traits": [first.model_copy(update={"requires": ["desk"]}),
                                                          *cat.topics[0].traits[1:]]}), *cat.topics[1:]]
    return cat.model_copy(update={"topics": topics, "genders": {"Omar": "m", "Lena": "f"},
                                  "occupation_tags": {"plumber": ["on_site"], "translator": ["desk"],
                                                      "graduate student": ["student", "desk"]}})


def _plant(suite: Suite, user: str, assistant: str = "Sure.", kind: str = "filler", **ann: str) -> Suite:
    """The suite with its first persona's tenth turn replaced."""
    turns = list(suite.dialogues)
    i = next(i for i, t in enumerate(turns) if t.persona_id == suite.personas[0].persona_id and t.turn == 10)
    turns[i] = turns[i].model_copy(update={"user": user, "assistant": assistant,
                                           "annotation": Annotation(kind=kind, **ann)})  # type: ignore[arg-type]
    return dataclasses.replace(suite, dialogues=turns)


def _plant_at(suite: Suite, turn: int, user: str, annotation: Annotation | None = None) -> Suite:
    """The suite with its first persona's turn ``turn`` saying ``user`` (a filler unless ``annotation`` says)."""
    turns = [t.model_copy(update={"user": user, "annotation": annotation or Annotation(kind="filler")})
             if t.persona_id == suite.personas[0].persona_id and t.turn == turn else t for t in suite.dialogues]
    return dataclasses.replace(suite, dialogues=turns)


def _with_profile(suite: Suite, **profile: object) -> Suite:
    first = suite.personas[0]
    p = first.model_copy(update={"profile": {**first.profile, **profile}})
    return dataclasses.replace(suite, personas=[p, *suite.personas[1:]])


def _found(suite: Suite, catalog: Catalog) -> dict[str, int]:
    return {k: len(v) for k, v in lints(suite, catalog).items()}


def _home(suite: Suite) -> str:
    return str(suite.personas[0].profile["city"])


def _other_city(suite: Suite, catalog: Catalog) -> str:
    return next(c for c in catalog.cities if c != _home(suite))


def test_every_kind_is_reported(suite):
    assert set(_found(suite, _catalog())) == set(KINDS)


@pytest.mark.parametrize("kind", ["unfilled_slot", "city_mismatch", "foreign_home_city", "pronoun_clash",
                                  "time_clash", "money_without_currency", "number_reply_mismatch",
                                  "profile_conflict"])
def test_a_planted_text_error_fires_its_lint_and_a_clean_twin_does_not(suite, kind):
    cat = _catalog()
    city, other = _home(suite), _other_city(suite, cat)
    bad, good = {
        "unfilled_slot": ("Ask {friend} about it.", "Ask Dana about it."),
        "city_mismatch": (f"Any good bakery near me in {other}?", f"Any good bakery near me in {city}?"),
        "foreign_home_city": (f"Here in {other} the buses are late.", f"Here in {city} the buses are late."),
        "pronoun_clash": ("Omar just moved into her new flat.", "Omar just moved into his new flat."),
        "time_clash": ("Booked a sunrise hike at 19:30 on Saturday.", "Booked a sunrise hike at 5:30 on Saturday."),
        "money_without_currency": ("I've got 12 in my emergency savings.", "I've got £12 in my emergency savings."),
        "number_reply_mismatch": ("Convert 4 miles to kilometres?", "Convert 5 miles to kilometres?"),
        "profile_conflict": ("How do I stay awake in lectures?", "How do I stay awake in meetings?"),
    }[kind]
    reply = "Each mile is 1.61 km, so 5 miles is about 8 km." if kind == "number_reply_mismatch" else "Sure."
    base = _with_profile(suite, occupation="plumber")
    before = _found(_plant(base, good, reply), cat)
    after = _found(_plant(base, bad, reply), cat)
    assert after[kind] == before[kind] + 1, (kind, before, after)


@pytest.mark.parametrize(("relation", "bad", "good"), [
    ("sister", "Kim called, his car broke down.", "Kim called, her car broke down."),
    # an occasion of the other gender (the blind read of seed 1301: "Mandla's hen weekend" for a man)
    ("brother", "Made a group chat for Kim's hen weekend.", "Made a group chat for Kim's stag weekend."),
])
def test_a_gendered_relation_fixes_the_pronoun_and_occasions_of_its_name(suite, relation, bad, good):
    cat = _catalog()
    first = suite.personas[0]
    kin = first.model_copy(update={"entities": [Entity(entity_id="e9", name="Kim", relation=relation)]})
    s = dataclasses.replace(suite, personas=[kin, *suite.personas[1:]])
    assert _found(_plant(s, bad), cat)["pronoun_clash"] == _found(_plant(s, good), cat)["pronoun_clash"] + 1


def test_the_renderer_never_gives_a_friend_an_occasion_of_the_other_gender() -> None:
    import random

    from dimobench.catalog import Exchange, find_catalog, load_catalog
    from dimobench.catalog import occasion_gender_clash as clash
    from dimobench.generate.text import Renderer

    cat = load_catalog(str(find_catalog("catalog-v3")))
    men = [n for n, g in cat.genders.items() if g == "m"][:3]
    women = [n for n, g in cat.genders.items() if g == "f"][:3]
    assert clash("Made a group for " + men[0] + "'s hen weekend.", cat.genders)
    pool = [Exchange(user="Made a group for {friend}'s hen weekend, the {n}th.", assistant="Mute the chat.")]
    r = Renderer(cat, random.Random(3), "Alex", set(), friends=men + women)
    r.at("2024-05-04T10:00:00")
    said = [r.render("hen", pool, n=str(i))[0] for i in range(30)]
    assert all(any(w + "'s hen" in t for w in women) for t in said), said[:3]


def test_a_trait_the_occupation_cannot_hold_and_an_old_student_are_profile_conflicts(suite):
    cat = _catalog()
    needs_desk = cat.topics[0].traits[0].trait_id
    holder = next(p for p in suite.personas if any(t.trait_id == needs_desk for t in p.traits))
    others = [p for p in suite.personas if p is not holder]

    def count(**profile: object) -> int:
        p = holder.model_copy(update={"profile": {**holder.profile, **profile}})
        return lints(dataclasses.replace(suite, personas=[p, *others]), cat)["profile_conflict"].count(p.persona_id)

    assert count(occupation="plumber", age=40) == 1
    assert count(occupation="translator", age=40) == 0
    assert count(occupation="graduate student", age=25) == 0
    assert count(occupation="graduate student", age=61) == 1


def test_two_states_held_at_once_that_clash_are_a_profile_conflict(suite):
    # the blind read of seed 2747: a night-shift sleeper running a freelance business, then in a daytime office
    cat = _catalog()
    p = next(x for x in suite.personas if len(x.traits) >= 2)
    sched = next(sc for sc in suite.schedules if sc.persona_id == p.persona_id)
    a, b = p.traits[0], p.traits[1]
    assert lints(suite, cat)["profile_conflict"].count(p.persona_id) == 0
    held = cat.model_copy(update={"clashes": [(f"{a.trait_id}:{a.initial_state}", f"{b.trait_id}:{b.initial_state}",
                                               "cannot be both")]})
    assert lints(suite, held)["profile_conflict"].count(p.persona_id) == 1
    # a state only reached later clashes from its change point on; one never held with the other does not
    drift = sched.drifts[0]
    other = next(t for t in p.traits if t.trait_id != drift.trait_id)
    later = cat.model_copy(update={"clashes": [(f"{drift.trait_id}:{drift.to_state}",
                                                f"{other.trait_id}:{other.initial_state}", "x")]})
    changed_back = any(d.trait_id == other.trait_id and d.change_point_turn < drift.change_point_turn
                       for d in sched.drifts)
    assert lints(suite, later)["profile_conflict"].count(p.persona_id) == (0 if changed_back else 1)
    never = next(s.state_id for s in other.states if s.state_id not in
                 {other.initial_state, *(d.to_state for d in sched.drifts if d.trait_id == other.trait_id)})
    apart = cat.model_copy(update={"clashes": [(f"{drift.trait_id}:{drift.to_state}", f"{other.trait_id}:{never}",
                                                "x")]})
    assert lints(suite, apart)["profile_conflict"].count(p.persona_id) == 0


def test_a_decoy_recalling_a_state_held_in_the_span_is_a_timeline_conflict(suite):
    cat = _catalog()
    p = suite.personas[0]
    trait = p.traits[0]
    held = {trait.initial_state} | {d.to_state for s in suite.schedules if s.persona_id == p.persona_id
                                    for d in s.drifts if d.trait_id == trait.trait_id}
    never = [s.state_id for s in trait.states if s.state_id not in held]
    base = _found(_plant(suite, "Ages ago I did that.", kind="decoy", trait_id=trait.trait_id,
                         state_id=never[0]), cat) if never else None
    bad = _found(_plant(suite, "Ages ago I did that.", kind="decoy", trait_id=trait.trait_id,
                        state_id=trait.initial_state), cat)
    assert base is None or bad["decoy_timeline"] == base["decoy_timeline"] + 1
    assert bad["decoy_timeline"] >= 1


def test_a_relation_the_household_or_the_age_rules_out_is_a_profile_conflict(suite):
    cat = _catalog()
    holder = suite.personas[0]
    trait = cat.trait(holder.traits[0].trait_id)
    topics = [tp.model_copy(update={"traits": [t.model_copy(update={"excludes_relations": ["flatmate"]})
                                               if t.trait_id == trait.trait_id else t for t in tp.traits]})
              for tp in cat.topics]
    cat = cat.model_copy(update={"topics": topics, "relation_max_age": {"grandmother": 45}})

    def count(relation: str, age: int) -> int:
        p = holder.model_copy(update={"profile": {**holder.profile, "age": age, "occupation": "translator"},
                                      "entities": [Entity(entity_id="e9", name="Kim", relation=relation)]})
        return lints(dataclasses.replace(suite, personas=[p, *suite.personas[1:]]), cat)["profile_conflict"] \
            .count(p.persona_id)

    assert count("flatmate", 30) == 1 and count("neighbour", 30) == 0
    assert count("grandmother", 60) == 1 and count("grandmother", 40) == 0


def test_naming_a_friend_outside_the_persona_circle_breaks_the_social_circle(suite):
    cat = _catalog()
    cat = cat.model_copy(update={"first_names": [*cat.first_names, "Ben", "Jack"]})
    p = suite.personas[0]
    friends = [n for n in cat.first_names if n not in {p.name.split()[0], *(e.name for e in p.entities)}][:3]
    circled = _with_profile(suite, friends=friends)
    # the small suite's own turns name friends from the whole catalog: blank them
    blank = [t.model_copy(update={"user": "Some text."}) if t.persona_id == p.persona_id else t
             for t in circled.dialogues]
    clean = _plant(dataclasses.replace(circled, dialogues=blank), f"{friends[0]} lent me a bike.")
    outsider = next(n for n in cat.first_names if n not in friends and n not in {p.name.split()[0]}
                    and n not in {e.name for e in p.entities} and n != "Will")
    assert p.persona_id not in lints(clean, cat)["social_circle"]
    stranger = _plant(clean, f"{outsider} lent me a bike.")
    assert p.persona_id not in lints(stranger, cat)["social_circle"]  # one turn: a book on Henry VIII, a shop
    stranger = _plant_at(stranger, 11, f"{outsider} wants the bike back.")
    assert p.persona_id in lints(stranger, cat)["social_circle"]
    # the Union Jack is a flag and Big Ben a bell: a first name inside a proper noun is nobody
    assert p.persona_id not in lints(_plant(clean, "Why is it called Big Ben and not the Union Jack?"),
                                     cat)["social_circle"]
    # a name the catalog's own user texts spell out is the same in every dialogue, never a friend (seed 1316:
    # "How did Henry's break with Rome happen?" three times); the same name from nowhere is a stranger
    henry = "How did {name}'s break with Rome actually happen?"
    tudor = cat.model_copy(update={"first_names": [*cat.first_names, "Henry", "Harold"], "filler": [
        *cat.filler, Exchange(user=henry.format(name="Henry"), assistant="The annulment.")]})
    for name, counted in (("Henry", False), ("Harold", True)):
        twice = _plant_at(_plant(clean, henry.format(name=name)), 11, henry.format(name=name))
        assert (p.persona_id in lints(twice, tudor)["social_circle"]) is counted, name


def test_a_seasonal_word_out_of_its_months_is_a_season_clash(suite):
    cat = _catalog()
    turn = next(t for t in suite.dialogues if t.persona_id == suite.personas[0].persona_id and t.turn == 10)
    month = int(turn.timestamp[5:7])
    bad = "Got sunburnt in the park today." if month in (11, 12, 1, 2, 3) else "Cleared the snow off the car."
    before = _found(_plant(suite, "Cleared the car today."), cat)["season_clash"]
    assert _found(_plant(suite, bad), cat)["season_clash"] == before + 1


def test_a_phrase_said_at_an_hour_it_denies_is_an_hour_clash(suite):
    cat = _catalog()
    turn = next(t for t in suite.dialogues if t.persona_id == suite.personas[0].persona_id and t.turn == 10)
    hour = int(turn.timestamp[11:13])
    bad = ("I'm winding down with chamomile before bed." if 3 <= hour <= 16 else
           "I've got a quiet hour before anyone else in the house is up.")
    before = _found(_plant(suite, "I'm having chamomile."), cat)["hour_clash"]
    assert _found(_plant(suite, bad), cat)["hour_clash"] == before + 1
    habit = "I always have chamomile before bed."  # a habit, said at any hour
    assert _found(_plant(suite, habit), cat)["hour_clash"] == before


def test_a_clock_time_or_the_sky_told_as_now_binds_the_hour():
    from dimobench.catalog import at_hour

    # the blind read of seed 1681: "it's gone 1am" at 15:00, the moon "tonight" at 08:43, a rainbow at 23:00
    assert at_hour("I'm designing a board game and it's gone 1am.", 2)
    assert not at_hour("I'm designing a board game and it's gone 1am.", 15)
    assert at_hour("It's 1:30am and I'm starving.", 1) and not at_hour("It's 1:30am and I'm starving.", 3)
    # seed 2041: "The kitchen clock says 2am" at 20:04
    assert at_hour("The kitchen clock says 2am.", 2) and not at_hour("The kitchen clock says 2am.", 20)
    assert at_hour("It's nearly 11pm, should I still eat?", 22) and not at_hour("It's nearly 11pm.", 23 - 12)
    assert not at_hour("I noticed a very bright point of light near the moon tonight.", 8)
    assert at_hour("I noticed a very bright point of light near the moon tonight.", 23)
    assert not at_hour("I saw a double rainbow over the rooftops after a shower.", 23)
    assert at_hour("I saw a film of oil on a puddle with rainbow colours in it.", 23)  # no sky in it
    assert not at_hour("There was thick fog in the valley when I opened the curtains.", 20)
    assert at_hour("I'm off to a gig tonight.", 8)  # a plan for tonight, said in the morning
    # the blind read of seed 2731: "Did six hours over the hills near home today" at 07:24
    hills = "Did six hours over the hills near home today as practice for the trek."
    assert not at_hour(hills, 7) and at_hour(hills, 18)
    assert not at_hour("I'm just back from six hours in the saddle in the hills.", 9)
    assert at_hour("Driving six hours to see my brother on Friday.", 8)  # a plan
    # seed 2747: "I'm knitting at 2am" at 13:15, "my second puncture of the morning" at 20:34
    assert not at_hour("I'm knitting at 2am and want some company.", 13) and at_hour("I'm knitting at 2am.", 2)
    assert not at_hour("Got my second puncture of the morning on a gravel stretch.", 20)
    assert at_hour("Got my second puncture of the morning on a gravel stretch.", 10)
    assert at_hour("I stayed up until 2am finishing it.", 14)  # a time told as past, not as now
    # seed 2231: lunch still to come at night, and a working day "still" going at breakfast
    assert not at_hour("It's a frozen lasagne this lunchtime and I'd like something on the side.", 19)
    assert at_hour("It's a frozen lasagne this lunchtime and I'd like something on the side.", 11)
    assert not at_hour("I made a cheese sandwich to take out with me this lunchtime.", 22)
    assert at_hour("The florist wrapped some tulips in brown paper for me this lunchtime.", 22)  # past: later
    assert not at_hour("It's 8:30 and I'm still answering messages.", 8)
    assert not at_hour("It's 10 and I'm still answering messages.", 10)
    # past tense with a possessive or "to the", said in the evening: fine (the review of this rule)
    assert at_hour("A client's labrador nearly pulled me over on the walk this lunchtime.", 19)
    assert at_hour("Got a flat tyre on the way to the cinema this lunchtime.", 19)
    assert at_hour("It's 20:30 and I'm still answering messages.", 20)
    # the blind read of seed 1911: "It's 10:00" at 09:04, a full moon "tonight" at 13:16, a rainbow "over the houses
    # opposite" at 21:59; a cookery lesson "this evening" at 22:34 is late, not a clash (22:12 is "this evening")
    assert not at_hour("It's 10:00 and I'm still answering messages.", 9) and at_hour("It's 10:00 now.", 10)
    assert not at_hour("There's a huge full moon hanging over the rooftops tonight.", 13)
    assert not at_hour("There's a double rainbow over the houses opposite after the shower.", 22)
    assert at_hour("Mum's teaching me her shepherd's pie this evening.", 22)
    assert at_hour("The stars should be clear for the meteor shower tonight.", 10)  # a forecast, not a sighting


def _rendered_at(when: str, contexts: list[str], seed: int, n: int = 8) -> list[str]:
    """``n`` user texts the v3 renderer writes at ``when`` from one act with ``contexts``."""
    import random

    from dimobench.catalog import Act, Exchange, find_catalog
    from dimobench.generate.text import Renderer

    cat = load_catalog(str(find_catalog("catalog-v3")))
    asks = [Exchange(user="Any tips?", assistant="Yes."), Exchange(user="Thoughts?", assistant="Sure.")]
    r = Renderer(cat, random.Random(seed), "Ana", {"Ana"}, home_city="Leeds")
    r.at(when)
    return [r.render_act("k", [Act(context=contexts, asks=asks)])[0] for _ in range(n)]


def test_the_v3_renderer_never_tells_the_sky_at_the_wrong_hour():
    said = _rendered_at("2024-07-14T09:00:00", ["I noticed a halo around the moon tonight.",
                                               "I saw a rainbow over the park."], 3)
    assert not any("moon" in u for u in said) and any("rainbow" in u for u in said), said


def test_the_v3_renderer_tells_a_clock_time_as_now_at_the_turns_hour():
    said = _rendered_at("2024-07-14T21:40:00", ["It's {clock} and I'm still answering messages.",
                                               "Another long day of {clock} meetings."], 5)
    now = [u for u in said if "It's " in u]  # after a lead ("Here's one.") or not
    assert now and all("It's 21:" in u for u in now), said


def test_the_v3_renderer_never_names_today_as_a_weekday():
    # the blind read of seed 1911: "Felipe and I are going to get our jabs together on Saturday" said on a Saturday
    said = _rendered_at("2024-07-14T10:00:00", ["Off to the car boot sale on {weekday}.",
                                               "Booked the dentist for {weekday}."], 2, n=40)  # a Sunday
    days = {d for u in said for d in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
            if d in u}
    assert "Sunday" not in days and len(days) >= 4, said


def test_the_v3_renderer_writes_this_month_and_keeps_seasonal_texts_in_season():
    said = _rendered_at("2024-07-14T10:00:00", ["Cleared the snow off the car.", "Booked a table for {month}."], 1)
    assert not any("snow" in u for u in said) and any("July" in u for u in said), said


def test_the_v3_renderer_tells_a_clock_time_that_happened_earlier_today_not_later():
    # The blind read of seed 2637: "I minted an NFT from an artist's drop at 12:45" sent at 12:17
    for seed in range(6):
        said = _rendered_at("2024-07-14T12:17:00", ["I minted an NFT from an artist's drop at {clock}.",
                                                   "I ordered a set of oil paints at {clock}."], seed)
        clocks = [re.search(r"(\d+):(\d\d)", u) for u in said]
        assert all(c and (int(c.group(1)), int(c.group(2))) <= (12, 17) for c in clocks), said
    # a plan or another day keeps any time: "moved to {weekday} at {clock}"
    later = _rendered_at("2024-07-14T08:05:00", ["The meeting has been moved to {weekday} at {clock}.",
                                                "The meeting was moved to {weekday} at {clock}."], 1, n=12)
    assert any(int(re.search(r"(\d+):", u).group(1)) > 8 for u in later), later


def test_the_season_words_know_their_months():
    from dimobench.catalog import in_season

    assert in_season("Knocked through a wall with a sledgehammer.", 8)  # a tool, not a sledge
    assert in_season("Ahmad snowballed the smallest balances down to zero.", 8)  # the debt method (seed 882)
    assert not in_season("Went sledging on the common.", 8) and in_season("Went sledging on the common.", 1)
    assert not in_season("The clocks go back this weekend.", 3) and in_season("The clocks go back this weekend.", 10)
    assert not in_season("The drive for Boxing Day is six hours.", 3)
    # the blind read of seed 2731: a grass-court match in December, Roland Garros news in January, an outdoor gig
    # in the park in January, knitwear put away for months in November, "the new quarter" in May
    assert not in_season("A grass-court match on Monday.", 12) and in_season("A grass-court match on Monday.", 6)
    assert not in_season("A player argued about a mark on the clay at Roland Garros.", 1)
    assert not in_season("The outdoor gig in the park on Thursday looks like a mudbath.", 1)
    assert not in_season("What's the best way to store knitwear I won't wear for months?", 11)
    assert in_season("How do I keep moths away from my knitwear?", 11)
    assert not in_season("Came in on Monday to get a head start on the new quarter.", 5)
    # seed 2747: caught out by the clocks in June, seed potatoes in July, murmurations in June
    assert not in_season("Ann turned up an hour out for lunch, caught out by the clocks.", 6)
    assert not in_season("The church clock was an hour out for days after the clocks last went back.", 8)
    assert not in_season("How long should seed potatoes chit before planting?", 7)
    assert in_season("How long should seed potatoes chit before planting?", 2)
    assert not in_season("I heard there are murmurations over the marshes near Leeds.", 6)
    assert in_season("The architecture tour was brilliant.", 6)
    # the blind read of seed 1441: light after nine on 2 December, a garden party and pollen in December, the
    # leaves turning yellow in late December; a question about autumn leaves fits any month
    assert not in_season("I noticed it's still light well after nine in the evening.", 12)
    assert in_season("I noticed it's still light well after nine in the evening.", 6)
    assert not in_season("I'm buying drinks for the garden party on Friday.", 12)
    assert not in_season("The pollen by the river set my eyes streaming.", 12)
    assert not in_season("The leaves on the oak in the park are starting to turn yellow.", 12)
    assert in_season("The leaves on the oak in the park are starting to turn yellow.", 10)
    assert in_season("Why do the leaves turn yellow and red in autumn?", 3)  # catalog-v3's own filler question
    assert in_season("A humidifier for dry winter air.", 1)
    # the blind read of seed 2577: elderflowers gathered for cordial on 24 October; the drink is sold all year
    assert not in_season("Gathering elderflowers for cordial along the old railway path near me.", 10)
    assert in_season("Gathering elderflowers for cordial along the old railway path near me.", 6)
    assert in_season("A cucumber and elderflower spritz looks special.", 12)
    # session 28's blind reads: a tent for a festival two months ahead, written in November; a Wimbledon
    # ballot that came back empty in October
    assert not in_season("Dan has sorted a tent for the festival in January.", 11)
    assert in_season("Dan has sorted a tent for the festival in July.", 5)
    assert in_season("The festival in January is indoors.", 11)
    assert not in_season("My Wimbledon ballot came back empty, so I'm going to try the queue.", 10)
    assert not in_season("My cousin's organising a reunion picnic on Sunday.", 1)


def _excluding(cat: Catalog, trait_id: str, state_id: str, words: list[str]) -> Catalog:
    """``cat`` as a v3 catalog in which ``state_id`` of ``trait_id`` excludes ``words``."""
    def state(s):
        return s.model_copy(update={"excludes": words}) if s.state_id == state_id else s

    topics = [tp.model_copy(update={"traits": [tr.model_copy(update={"states": [state(s) for s in tr.states]})
                                               if tr.trait_id == trait_id else tr for tr in tp.traits]})
              for tp in cat.topics]
    return cat.model_copy(update={"topics": topics, "text_rules": "v3"})


def test_a_word_a_held_state_excludes_is_a_state_clash_unless_the_turn_shows_that_trait(suite):
    from dimobench.suite.plan import LatentPlan

    p = suite.personas[0]
    plan = LatentPlan(p, next(s for s in suite.schedules if s.persona_id == p.persona_id))
    trait = plan.stable_traits[0]
    cat = _excluding(_catalog(), trait, plan.state_at(trait, 10), ["cheese", "whole milk"])
    before = _found(_plant(suite, "Made a sandwich for the train."), cat)["state_clash"]
    assert _found(_plant(suite, "Made a cheese sandwich for the train."), cat)["state_clash"] == before + 1
    assert _found(_plant(suite, "Any tips?", "Froth cold whole milk."), cat)["state_clash"] == before + 1  # reply
    assert _found(_plant(suite, "Made two cheeses."), cat)["state_clash"] == before + 1  # a plural
    assert _found(_plant(suite, "Ate cheesecake."), cat)["state_clash"] == before  # a longer word is not the word
    shown = {"kind": "cue", "trait_id": trait, "state_id": plan.state_at(trait, 10)}
    assert _found(_plant(suite, "Made a cheese sandwich.", **shown), cat)["state_clash"] == before
    assert _found(_plant(suite, "Made a cheese sandwich.", kind="entity"), cat)["state_clash"] == before


def test_the_v3_renderer_never_writes_a_barred_word():
    import random

    from dimobench.catalog import Act, Exchange, barred_words, find_catalog
    from dimobench.generate.text import Renderer

    cat = load_catalog(str(find_catalog("catalog-v3")))
    asks = [Exchange(user="Any tips?", assistant="Yes."), Exchange(user="Thoughts?", assistant="Froth some milk.")]
    act = Act(context=["Made a cheese sandwich.", "Made a hummus wrap.", "Packed soup."], asks=asks)
    r = Renderer(cat, random.Random(3), "Ana", {"Ana"}, home_city="Leeds")
    r.barred = barred_words(frozenset({"cheese", "milk"}))
    said = [r.render_act("k", [act]) for _ in range(10)]
    assert not any("cheese" in u or "milk" in a for u, a in said), said


def _with_v3_texts(cat: Catalog) -> Catalog:
    """``cat`` with v3 text rules, one composed filler that tells an occasion, and a fixed part on its first state."""
    from dimobench.catalog import Act

    first = cat.topics[0].traits[0]
    state = first.states[0].model_copy(update={"parts": {"kid": ["our son", "our daughter"]}, "fixed_parts": ["kid"]})
    trait = first.model_copy(update={"states": [state, *first.states[1:]]})
    topics = [cat.topics[0].model_copy(update={"traits": [trait, *cat.topics[0].traits[1:]]}), *cat.topics[1:]]
    wake = Act(context=["My great-uncle's wake is on {weekday}.", "The wake for my great-uncle is this {weekday}.",
                        "Relatives are coming round."],
               asks=[Exchange(user="What do I say?", assistant="Keep it short."),
                     Exchange(user="What do I wear?", assistant="Something dark.")])
    watch = Act(context=["I finally went for the gold watch.", "My new gold watch came in a box."],
                asks=[Exchange(user="Is a winder worth it?", assistant="Not really."),
                      Exchange(user="How often should it be serviced?", assistant="Every few years.")], once=True)
    return cat.model_copy(update={"topics": topics, "text_rules": "v3", "filler_acts": [wake, watch]})


@pytest.mark.parametrize(("kind", "first", "again", "clean"), [
    # the blind read of seed 1341: one wake on Monday, then on Tuesday; one toddler, a son and then a daughter
    ("occasion_retold", "My great-uncle's wake is on Monday. What do I say?",
     "My great-uncle's wake is on Tuesday. What do I wear?", "Relatives are coming round. What do I wear?"),
    # the same occasion in the act's other words (seed 1471: one jury summons, told twice)
    ("occasion_retold", "My great-uncle's wake is on Monday. What do I say?",
     "The wake for my great-uncle is this Friday. What do I wear?", "Relatives are coming round. What do I say?"),
    # a once act's contexts tell one occasion though none has a slot (seed 2401: one chronograph bought thrice)
    ("occasion_retold", "I finally went for the gold watch. Is a winder worth it?",
     "My new gold watch came in a box. How often should it be serviced?", "Relatives are coming round. What do I say?"),
    ("part_clash", "Bedtime with our son is a battle. Tips?", "Bedtime with our daughter is a battle. Ideas?",
     "Bedtime with our son is still a battle. Ideas?"),
])
def test_a_retold_occasion_and_a_fixed_part_with_two_values_fire_their_lints(suite, kind, first, again, clean):
    cat = _with_v3_texts(_catalog())
    trait = cat.topics[0].traits[0]
    # a fixed part is its trait's: planted as cues of that trait (a filler's "our daughter" is someone else's)
    cue = Annotation(kind="cue", trait_id=trait.trait_id, state_id=trait.states[0].state_id)
    ann = cue if kind == "part_clash" else None
    told = _plant_at(suite, 10, first, ann)
    assert _found(_plant_at(told, 20, again, ann), cat)[kind] == 1
    assert _found(_plant_at(told, 20, clean, ann), cat)[kind] == 0
    assert _found(_plant_at(told, 20, again), cat)["part_clash"] == 0
    assert _found(_plant_at(told, 20, again, ann), _catalog())[kind] == 0  # catalogs before v3 have neither
