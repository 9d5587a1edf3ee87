"""catalog-v3 suites: composed turns that seldom repeat across seeds, typed slots that agree with the persona's
record, profiles that fit their traits, decoys that never contradict the timeline, and no lint."""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from dimobench.api import audit_suite, load_suite
from dimobench.audit.diversity import diversity
from dimobench.catalog import (
    FEMALE_RELATIONS,
    MALE_RELATIONS,
    WEEKDAYS,
    Act,
    Exchange,
    find_catalog,
    load_catalog,
)
from dimobench.generate.clock import HOURS
from dimobench.generate.text import Renderer, habit_of
from tests.helpers.suites import generate

V3 = find_catalog("catalog-v3")
assert V3 is not None
CAT = load_catalog(str(V3))


def _make(out: Path, seed: int, workers: int | None = None) -> Path:
    with pytest.MonkeyPatch.context() as mp:  # what ``generate --catalog catalog-v3`` sets
        mp.setenv("DIMOBENCH_CATALOG", str(V3))
        return generate(out, "dimobench", workers, seed=seed, qa_rules="valid")


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("v3")
    return [load_suite(_make(root / f"s{seed}", seed)) for seed in (901, 902)]


def test_the_suite_records_catalog_v3_and_is_composed(suites):
    s = suites[0]
    assert s.manifest.config["catalog"] == "catalog-v3"
    cues = [t for t in s.dialogues if t.annotation and t.annotation.kind == "cue"]
    fixed = {c.user for tp in CAT.topics for tr in tp.traits for st in tr.states for c in st.cues}
    assert cues and not any(t.user in fixed for t in cues)


def test_two_seeds_share_at_most_a_tenth_of_their_user_turns(suites):
    a, b = suites
    d = diversity(a, [("b", b)])
    assert d["overlap_with"]["b"] <= 0.10, d  # type: ignore[index]
    assert d["distinct_user_turns"] >= 0.90, d


def test_a_preset_suite_offers_over_a_thousand_distinct_option_texts(suites, tmp_path: Path):
    # issue 16; before a persona's less-offered texts were preferred, seed 2324 offered 956
    for s in [*suites, load_suite(_make(tmp_path / "s2324", 2324))]:
        assert len({o for q in s.qa for o in q.options}) >= 1000, s.path


def test_no_lint_and_no_flag(suites):
    for s in suites:
        report = audit_suite(Path(s.path))
        assert not any(report.lints.values()), {k: v[:5] for k, v in report.lints.items() if v}
        assert report.flags is not None and sum(report.flags.values()) == 0, report.flags


def test_money_is_in_the_persona_currency(suites):
    symbols = {c.strip() for c in CAT.currencies.values()}
    pattern = re.compile(r"(" + "|".join(re.escape(c) for c in sorted(symbols, key=len, reverse=True)) + r") ?\d")
    seen = 0
    for s in suites:
        home = {p.persona_id: CAT.currencies[str(p.profile["city"])].strip() for p in s.personas}
        for t in s.dialogues:
            for m in pattern.finditer(t.user):
                seen += 1
                # "A$" ends in "$": the longest symbol that matches here is the one written
                assert m.group(1) == home[t.persona_id] or home[t.persona_id].endswith(m.group(1)), t.user
    assert seen > 0


def test_relations_and_names_share_a_gender_and_occupations_fit_the_traits(suites):
    for s in suites:
        for p in s.personas:
            for e in p.entities:
                words = set(e.relation.replace("-", " ").split())
                if words & FEMALE_RELATIONS:
                    assert CAT.genders[e.name] == "f", (e.name, e.relation)
                if words & MALE_RELATIONS:
                    assert CAT.genders[e.name] == "m", (e.name, e.relation)
            tags = set(CAT.occupation_tags[str(p.profile["occupation"])])
            for tr in p.traits:
                assert set(CAT.trait(tr.trait_id).requires) <= tags, (p.profile, tr.trait_id)


def test_decoys_recall_only_states_the_persona_never_holds(suites):
    for s in suites:
        held: dict[tuple[str, str], set[str]] = {}
        for p in s.personas:
            for tr in p.traits:
                held.setdefault((p.persona_id, tr.trait_id), set()).add(tr.initial_state)
        for sc in s.schedules:
            for d in sc.drifts:
                held[(sc.persona_id, d.trait_id)].add(d.to_state)
        decoys = [t for t in s.dialogues if t.annotation and t.annotation.kind == "decoy"]
        assert decoys
        for t in decoys:
            assert t.annotation.state_id not in held[(t.persona_id, t.annotation.trait_id)], t.user


def test_a_clock_falls_inside_its_time_of_day_and_pronouns_follow_the_friend():
    act = Act(context=["Plans this {time_of_day} at {clock} with {friend}.", "Meeting {friend} at {clock}."],
              asks=[Exchange(user="Should I bring {friend_them} {friend_their} book?", assistant="Yes."),
                    Exchange(user="Can I bring {friend_them} {friend_their} book?", assistant="Yes.")])
    r = Renderer(CAT, random.Random(5), "Ann", {"Ann"}, home_city=CAT.cities[0])
    for i in range(200):
        user, _ = r.render_act(f"k{i}", [act])
        friend = next(n for n in CAT.first_names if re.search(rf"\b{n}\b", user))
        pronoun = "her" if CAT.genders[friend] == "f" else "him"
        assert f" {pronoun} " in user, user
        said = re.search(r"this ([a-z -]+) at (\d+):", user)
        if said:
            first, last = HOURS[said.group(1)]
            assert first <= int(said.group(2)) <= last, user


def test_a_past_day_of_this_week_or_month_is_one_already_past():
    # The blind read of seed 2697: "our bins were skipped this Friday" on a Thursday, "got through three books in
    # January" on 7 January. A past "this {weekday}" names a day of this week already gone (never said on a
    # Monday), a past "in/this {month}" is not said in the month's first days; plans keep any day.
    past = [Exchange(user="Our bins were skipped this {weekday} for no reason.", assistant="Ring the council."),
            Exchange(user="Got through three books in {month} and want another.", assistant="Try a short one.")]
    plan = [Exchange(user="{friend} offered to spot me on bench this {weekday}.", assistant="Warm up first.")]
    days = {"2024-05-09T10:00:00": ("Thursday", 9), "2024-05-13T10:00:00": ("Monday", 13),
            "2024-05-25T18:00:00": ("Saturday", 25), "2024-05-03T09:00:00": ("Friday", 3)}
    for stamp, (today, day) in days.items():
        earlier = WEEKDAYS[:WEEKDAYS.index(today)]
        for seed in range(4):
            r = Renderer(CAT, random.Random(seed), "Ana", {"Ana"}, home_city="Leeds")
            r.at(stamp)
            for i in range(12):
                user, _ = r.render(f"past{i}", past, n=str(i))
                bins = re.search(r"skipped this (\w+)", user)
                if bins:
                    assert bins.group(1) in earlier, (stamp, user)
                assert not ("books in May" in user and day <= 10), (stamp, user)
            told = {re.search(r"this (\w+)", r.render("plan", plan)[0]).group(1) for _ in range(8)}  # type: ignore
            assert today not in told and (len(told) > 1 or today == "Saturday"), (stamp, told)
    r = Renderer(CAT, random.Random(1), "Ana", {"Ana"}, home_city="Leeds")
    r.at("2024-05-25T18:00:00")
    assert any("books in May" in r.render(f"late{i}", past)[0] for i in range(12))


def test_an_occasion_with_its_own_price_or_month_is_told_once_per_persona():
    # The blind read of seed 1301 found one drone pledge told as 1,200 and later as 600, one festival in July and
    # later in August: an act context with such slots is one occasion, so a persona tells it once.
    # The blind read of seed 1471: one jury summons told twice in an act's other words, one savings plan at £90
    # and later £120: an act's contexts with such slots tell one occasion, so they are told once between them.
    asks = [Exchange(user=f"Question {i}?", assistant="Answer.") for i in range(6)]
    acts = [Act(context=["I pledged {price} for the drone.", "The drone pledge came to {price}.", "My knee hurts.",
                         "My knee aches."], asks=asks),
            Act(context=["The festival is this {month}.", "My back hurts.", "My back aches."], asks=asks),
            # seed 2231: "Got my first one-star review" three times: a first is one occasion too
            Act(context=["Got my first one-star review.", "My neck hurts.", "My neck aches."], asks=asks)]
    r = Renderer(CAT, random.Random(7), "Ana", {"Ana"}, home_city="Leeds")
    said = []
    for i in range(18):
        r.at(f"2024-{3 + i % 6:02d}-10T10:00:00")
        said.append(r.render_act("k", acts)[0])
    assert sum("pledge" in u for u in said) == 1 and sum("festival" in u for u in said) == 1, said
    assert sum("first one-star" in u for u in said) == 1, said
    assert sum("hurts" in u or "aches" in u for u in said) == 15


def test_an_ask_asked_again_gets_a_reply_the_persona_has_not_heard_yet():
    # Session 29: in an XL suite 77% of cue turns had a reply the persona had already heard word for word (each
    # ask had one reply, and a state is cued ~65 times in 1,050 turns). An ask's ``also`` replies are heard in turn.
    asks = [Exchange(user="How do I stop it pulling?", assistant="Stop when the lead goes tight.",
                     also=["Reward it for walking beside you.", "Try a front-clip harness."]),
            Exchange(user="Is a harness better?", assistant="Often, for a puller.")]
    act = Act(context=["My spaniel pulls on the lead.", "Bramble pulled me over.", "The lead burns my hand."],
              asks=asks)
    r = Renderer(CAT, random.Random(3), "Ana", {"Ana"}, home_city="Leeds")
    r.at("2024-05-10T10:00:00")
    heard = [reply for _ in range(8) for user, reply in [r.render_act("k", [act])] if "pulling?" in user]
    assert len(heard) >= 3 and len(set(heard[:3])) == 3, heard  # all three before any comes back
    assert Exchange(user="Q?", assistant="A.").replies() == ["A."]


def test_a_pet_keeps_its_name_and_each_persona_has_its_own():
    # Session 28's blind reads met pets of one name in two personas: every dog owner of every suite walked
    # Bramble and every cat owner fed Pepper (the catalog's texts named them). A pet's name is now a fixed part,
    # drawn once per persona.
    for state_id, part in (("dog_owner", "dog"), ("cat_owner", "cat")):
        st = next(s for s in CAT.trait("pet_life").states if s.state_id == state_id)
        named = []
        for seed in range(6):
            r = Renderer(CAT, random.Random(seed), "Ana", {"Ana"}, home_city="Leeds")
            r.at("2024-05-10T10:00:00")
            said = " ".join(u + " " + a for u, a in (r.render_act(state_id, st.acts, st.parts, fixed=st.fixed_parts)
                                                     for _ in range(30)))
            names = {n for n in st.parts[part] if re.search(rf"\b{n}\b", said)}
            assert len(names) == 1 and "{" not in said, (state_id, seed, names)
            named += names
        assert len(set(named)) >= 4, named


def test_a_state_reached_by_a_drift_is_told_without_years_of_history(suites):
    # The blind read of seed 2627: an early adopter traded in last year's phone, drifted to keeping old kit going,
    # and then said "My eight-year-old phone dies by lunchtime". A state the persona came to by a drift is told
    # without the contexts of a state held for years while its act has others.
    from dimobench.catalog import LONG_HELD

    assert LONG_HELD.search("My eight-year-old phone dies by lunchtime.")
    assert LONG_HELD.search("The vents on a laptop I've had for years are caked in dust.")
    assert LONG_HELD.search("My best mate and I have been friends since school.")
    assert not LONG_HELD.search("I want one pair of boots that lasts for years.")
    assert not LONG_HELD.search("My backside is sore for ages after each outing on the saddle.")
    # the blind read of seed 2697: a dog that came with a drift, then "Domino is twelve"
    assert LONG_HELD.search("{dog} is twelve and struggles with the stairs first thing in the morning.")
    assert LONG_HELD.search("{dog} has gone off the kibble I've been buying all year.")
    assert not LONG_HELD.search("The running club's {weekday} loop is ten kilometres.")
    asks = [Exchange(user="How do I make it last?", assistant="Look after the battery."),
            Exchange(user="Is it worth repairing?", assistant="Often, yes.")]
    act = Act(context=["My eight-year-old phone dies by lunchtime.", "The phone's battery is swelling.",
                       "A laptop I've had for years is slowing down."], asks=asks)
    for new_to_it, told in ((True, False), (False, True)):
        r = Renderer(CAT, random.Random(4), "Ana", {"Ana"}, home_city="Leeds")
        r.at("2024-05-10T10:00:00")
        said = [r.render_act("k", [act], new_to_it=new_to_it)[0] for _ in range(6)]
        assert any(LONG_HELD.search(u) for u in said) is told, said
    for s in suites:
        initial = {(p.persona_id, t.trait_id): t.initial_state for p in s.personas for t in p.traits}
        late = [t.user for t in s.dialogues if t.annotation and t.annotation.kind == "cue"
                and t.annotation.state_id != initial[(t.persona_id, t.annotation.trait_id)]]
        assert late and not [u for u in late if LONG_HELD.search(u)]


def test_a_distant_past_is_told_once(suites):
    # The blind read of seed 2627: "back then I wore smart tailored suits and crisp shirts on ordinary weekdays"
    # twice in five minutes, in two decoy templates
    from dimobench.generate.text import habit_of

    told = Counter()
    for s in suites:
        for t in s.dialogues:
            if t.annotation and t.annotation.kind == "decoy":
                st = next(x for x in CAT.trait(t.annotation.trait_id).states if x.state_id == t.annotation.state_id)
                said = [h for h in st.habits if habit_of(h, CAT, None) in t.user]
                assert said, t.user
                told[(s.path, t.persona_id, said[0])] += 1
                # nor a past that a trait the persona holds shows now (seed 2637: "years ago I hand-made objects
                # at a workbench" beside a dovetailed table of another trait's cues)
                plan = {p.persona_id: p for p in s.personas}[t.persona_id]
                held = {(x.trait_id, x.initial_state) for x in plan.traits if x.trait_id != t.annotation.trait_id}
                held |= {(d.trait_id, d.to_state) for sc in s.schedules if sc.persona_id == t.persona_id
                         for d in sc.drifts if d.trait_id != t.annotation.trait_id}
                clash = [o for o in (*st.answers, *st.recommendations) for c in CAT.conflicts.get(o, ())
                         if tuple(c) in held]
                assert not clash, (t.user, clash)
    assert told and max(told.values()) == 1, told.most_common(3)
    # The blind read of seed 2731: one distant past recalled in five wordings in one dialogue, and a stepbrother
    # given the user's own distant past word for word. At most two recalls per trait; a habit told of one person.
    recalls = Counter((s.path, t.persona_id, t.annotation.trait_id) for s in suites for t in s.dialogues
                      if t.annotation and t.annotation.kind == "decoy")
    assert max(recalls.values()) <= 2, recalls.most_common(3)
    # and none of a trait that changes (the blind read of seed 2747: a temporal question then had two answers)
    for s in suites:
        changing = {(sc.persona_id, d.trait_id) for sc in s.schedules for d in sc.drifts}
        assert not [k for k in recalls if k[0] == s.path and k[1:] in changing]
    for s in suites:
        names = {(p.persona_id, e.name): e for p in s.personas for e in p.entities}
        for pid in {p.persona_id for p in s.personas}:
            own = {h for (path, who, h) in told if path == s.path and who == pid}
            others = [t.user for t in s.dialogues if t.persona_id == pid and t.annotation
                      and t.annotation.kind == "entity"]
            for h in own:
                assert not [u for u in others if any(habit_of(h, CAT, n) in u for (q, n) in names if q == pid)], h


def test_no_two_questions_ask_about_one_trait_after_one_turn(suites):
    # The blind read of seed 2731: two slots that found nothing askable before turn 7 both asked about the home
    # there, in other words ("What stands out about Kaito's home right now?", "What defines Kaito's home ...")
    for s in suites:
        asked = Counter((q.persona_id, q.trait_id, q.ask_turn) for q in s.qa)
        assert max(asked.values()) == 1, asked.most_common(2)


def test_a_preset_persona_tells_each_filler_happening_once(suites):
    # Blind read of seed 2677: a jury summons received three times, a chirping smoke alarm asked about three
    # times, stale bread three times, in one dialogue. Every filler act is told once, and acts of one group (three
    # smoke-alarm acts) count as one, while any other is left: a preset's persona never runs out.
    from dimobench.catalog import template_pattern

    pieces = [(a.group or f"act{i}", *template_pattern(c)) for i, a in enumerate(CAT.filler_acts) for c in a.context]
    assert sum(1 for a in CAT.filler_acts if a.group) >= 40
    for s in suites:
        told: Counter[tuple[str, str]] = Counter()
        for t in s.dialogues:
            if t.annotation and t.annotation.kind == "filler":
                low = t.user.lower()
                for key in {k for k, lit, rx in pieces if lit.lower() in low and rx.search(t.user)}:
                    told[(t.persona_id, key)] += 1
        assert len(told) > 300 and max(told.values()) == 1, told.most_common(3)


def test_a_preset_persona_seldom_asks_a_question_it_asked_before(suites):
    # Blind read of seed 2677: one persona asked 14 questions twice word for word, a state held for 200 turns
    # having spent its asks (6.8% of that suite's cue turns asked a question again; 0.9% with a third ask per act)
    for s in suites:
        asked: dict[str, set[str]] = {}
        again = cues = 0
        for t in s.dialogues:
            question = next((x for x in reversed(re.split(r"(?<=[.!?])\s+", t.user.strip())) if x.endswith("?")), None)
            if t.annotation and t.annotation.kind == "cue" and question:
                cues += 1
                again += question in asked.setdefault(t.persona_id, set())
            if question:
                asked.setdefault(t.persona_id, set()).add(question)
        assert cues > 500 and again / cues <= 0.03, (again, cues)


def test_a_persona_recalls_one_distant_past_per_trait(tmp_path: Path):
    # XL seed 2636 (session 29's code): one persona recalled three abandoned ways of learning, so the one option
    # its distant pasts never named was the answer; `dimobench audit`'s past_inverse scored 0.442 on it
    from dimobench.api import GenerateConfig, generate_suite

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DIMOBENCH_CATALOG", str(V3))
        generate_suite(GenerateConfig(turns=600, personas=2, drifts=2, seed=2636, qa_rules="valid"), tmp_path / "long")
    pasts: dict[tuple[str, str | None], set[str | None]] = {}
    for t in load_suite(tmp_path / "long").dialogues:
        if t.annotation and t.annotation.kind == "decoy":
            pasts.setdefault((t.persona_id, t.annotation.trait_id), set()).add(t.annotation.state_id)
    assert sum(len(v) for v in pasts.values()) >= 4, pasts  # enough distant pasts for a second one to show
    assert all(len(v) == 1 for v in pasts.values()), pasts


def test_a_person_the_user_mentions_keeps_one_state_of_each_trait(suites):
    # The blind read of seed 1911: an old school friend coding, then feeding a cat, walking a hound, and the cat
    # again. A confounder may show anyone in any state, but one person stays in one state of a trait.
    for s in suites:
        shown: dict[tuple[str, str | None, str | None], set[str | None]] = {}
        for t in s.dialogues:
            if t.annotation and t.annotation.kind == "entity":
                key = (t.persona_id, t.annotation.entity_id, t.annotation.trait_id)
                shown.setdefault(key, set()).add(t.annotation.state_id)
        assert len(shown) >= 40 and all(len(v) == 1 for v in shown.values()), shown
        # and no running commentary (the blind read of seed 2747: a landlord six times, an aunt's check-ups three
        # times): at most four things of one person, two of one of their traits
        per_trait = Counter((t.persona_id, t.annotation.entity_id, t.annotation.trait_id) for t in s.dialogues
                            if t.annotation and t.annotation.kind == "entity")
        per_person = Counter(k[:2] for k in per_trait.elements())
        assert max(per_trait.values()) <= 2 and max(per_person.values()) <= 4, per_person.most_common(2)
        # and a trait new to the people around the user goes to one of those shown in the fewest traits so far,
        # among five to seven people (seeds 2111, 2231, 2251: a cousin with every habit the user's traits offer)
        for p in s.personas:
            names = [e.name for e in p.entities]
            assert 5 <= len(names) <= 7 and len(set(names)) == len(names) and p.name.split()[0] not in names
        # (among those with something left to tell: one told PERSON_TELLINGS things already is not drawn, so on
        # seed 901 a person of two traits and four tellings gave way to one of three traits and three tellings)
        from dimobench.generate.stages.confounders import PERSON_TELLINGS

        for pid in {t.persona_id for t in s.dialogues}:
            people = {e.entity_id for p in s.personas if p.persona_id == pid for e in p.entities}
            traits_of: dict[str | None, set[str | None]] = {e: set() for e in people}
            tellings: Counter[str | None] = Counter()
            firsts = 0
            for t in s.dialogues:
                a = t.annotation
                if t.persona_id != pid or not a or a.kind != "entity":
                    continue
                if a.trait_id not in traits_of[a.entity_id]:
                    untouched = [e for e in people
                                 if a.trait_id not in traits_of[e] and tellings[e] < PERSON_TELLINGS]
                    assert len(traits_of[a.entity_id]) == min(len(traits_of[e]) for e in untouched), (pid, t.turn)
                    traits_of[a.entity_id].add(a.trait_id)
                    firsts += 1
                tellings[a.entity_id] += 1
            assert firsts >= 3
        # and one thing about a person is news once (seed 2071: "Something I only recently learned" told twice)
        told: Counter[tuple[str, str | None, str]] = Counter()
        names = {(p.persona_id, e.entity_id): e.name for p in s.personas for e in p.entities}
        for t in s.dialogues:
            if t.annotation and t.annotation.kind == "entity":
                entry = CAT.trait(str(t.annotation.trait_id))
                state = next(st for st in entry.states if st.state_id == t.annotation.state_id)
                name = names[(t.persona_id, str(t.annotation.entity_id))]
                habit = max((h for h in state.habits if habit_of(h, CAT, name) in t.user), key=len)
                told[(t.persona_id, t.annotation.entity_id, habit)] += 1
        assert told and max(told.values()) == 1, told.most_common(3)
        # and the user's distant past never has a stage of life ("years ago I eased into semi-retirement" at 43)
        decoys = [t for t in s.dialogues if t.annotation and t.annotation.kind == "decoy"]
        assert decoys and not [t.user for t in decoys if CAT.trait(str(t.annotation.trait_id)).min_age]


def test_traits_no_occupation_fits_together_are_drawn_again():
    # seed 2053 stopped with "no occupation has the tags ['desk', 'shifts']" once sleep_schedule needed a job
    # with night shifts: a trait set no occupation fits is drawn again, and only a catalog where no set can fit
    # is an error. Here no occupation has a tag, so only traits that require none may be drawn.
    from dimobench.generate.config import GenerateConfig
    from dimobench.generate.stages import personas as stage1

    untagged = CAT.model_copy(update={"occupation_tags": {o: [] for o in CAT.occupations}})
    needy = {tr.trait_id for tp in CAT.topics for tr in tp.traits if tr.requires}
    assert needy
    out = stage1.run(GenerateConfig(seed=2053, personas=20, traits=8), untagged, random.Random(2053))
    assert not [t.trait_id for p in out.personas for t in p.traits if t.trait_id in needy]
    hopeless = CAT.model_copy(deep=True)
    for tp in hopeless.topics:
        for tr in tp.traits:
            tr.requires = ["night_vision"]
    with pytest.raises(ValueError, match="night_vision"):
        stage1.run(GenerateConfig(seed=1, personas=1), hopeless, random.Random(1))


def test_the_distant_past_of_a_trait_bound_to_an_age_is_never_told():
    # seed 2041: "years and years back I trimmed duties ahead of retirement", said by a 43-year-old
    from dimobench.generate.config import GenerateConfig
    from dimobench.generate.stages import confounders, personas
    from dimobench.suite.schema import Schedule, State, Trait, Turn

    aged = [tr for tp in CAT.topics for tr in tp.traits if tr.min_age]
    assert aged
    person = personas.run(GenerateConfig(seed=3, personas=1), CAT, random.Random(3)).personas[0]
    entry = aged[0]  # the persona holds that trait only, so every decoy would be of it
    person.traits = [Trait(trait_id=entry.trait_id, topic=CAT.topic_of(entry.trait_id).topic,
                           states=[State(state_id=st.state_id, description=st.description) for st in entry.states],
                           initial_state=entry.states[0].state_id)]
    turns = [Turn(persona_id=person.persona_id, turn=n, session=1, timestamp=f"2024-03-{1 + n // 20:02d}T10:00:00",
                  user=f"Filler {n}.", assistant="Ok.", annotation={"kind": "filler"}) for n in range(1, 201)]
    out = confounders.run(GenerateConfig(seed=3, confounder_rate=0.5, qa_rules="valid"), confounders.Inputs(
        catalog=CAT, personas=[person], schedules=[Schedule(persona_id=person.persona_id, drifts=[], phases=[])],
        turns=turns, used_user={}), random.Random(3))
    kinds = Counter(t.annotation.kind for t in out.turns if t.annotation)
    assert kinds["entity"] > 10 and kinds["decoy"] == 0, kinds


def test_an_act_asks_its_other_question_before_repeating_one():
    # The blind read of seed 1911 found one Komoot reply three times in a dialogue while the act's other asks
    # were never asked: a persona asks each ask of an act once before any is asked again.
    asks = [Exchange(user=f"Question {i}?", assistant=f"Answer {i}.") for i in range(4)]
    act = Act(context=[f"Thing {i} happened." for i in range(8)], asks=asks)
    for seed in range(5):
        replies = [reply for _, reply in _render_one_act(act, seed, 8)]
        assert sorted(replies[:4]) == [f"Answer {i}." for i in range(4)], replies


def _render_one_act(act: Act, seed: int, times: int, leads: list[str] | None = None) -> list[tuple[str, str]]:
    """``times`` turns of one persona rendered from ``act`` alone, all at one hour."""
    r = Renderer(CAT, random.Random(seed), "Ana", {"Ana"}, home_city="Leeds")
    said = []
    for _ in range(times):
        r.at("2024-03-10T10:00:00")
        said.append(r.render_act("k", [act], leads=leads))
    return said


def test_once_an_act_is_spent_its_turns_come_back_in_turn_and_behind_one_lead():
    # Session 26: an XL persona holding a state for 60 cue turns asked "Are there apps that post cards for me?"
    # 11 times, and a turn said again got a second lead in front of its first ("Small thing. Another one for
    # you: ..."). Spent, an act's turns come back least recently said first, each behind exactly one lead.
    asks = [Exchange(user="Any tips?", assistant="Yes."), Exchange(user="Thoughts?", assistant="Sure.")]
    act = Act(context=["Sorted the spice rack again.", "Relabelled every jar in the cupboard.",
                       "Cleared the fridge door of old sauces."], asks=asks)
    for seed in range(3):
        said = [user for user, _ in _render_one_act(act, seed, 30)]
        leads = [next((lead for lead in CAT.leads if u.startswith(lead + " ")), "") for u in said]
        bodies = [u[len(lead) + 1:] if lead else u for u, lead in zip(said, leads, strict=True)]
        assert sorted(Counter(bodies).values()) == [5] * 6, Counter(bodies)
        assert all(bodies[i] != bodies[i - 1] for i in range(1, 30)), bodies
        assert not any(body.startswith(lead + " ") for body in bodies for lead in CAT.leads), said
        assert len(set(said)) == 30, said


def test_a_trial_turn_said_again_still_opens_with_a_trial_lead():
    # session 26's review: a drift's trial cue that fell to the last-resort reopening got a catalog lead ("Small
    # thing.") instead of a trial lead, so a hesitant first try read like any other cue
    asks = [Exchange(user="Any tips?", assistant="Yes."), Exchange(user="Worth it?", assistant="Maybe.")]
    act = Act(context=["Tried a spin class once.", "Gave the spin bike a go."], asks=asks)
    trial = ["Not sure yet, but", "First go at something new:"]
    for seed in range(3):
        said = [user for user, _ in _render_one_act(act, seed, 10, leads=trial)]
        assert all(any(u.startswith(lead + " ") for lead in trial) for u in said), said
        assert len(set(said)) >= 2, said


def test_the_same_seed_gives_the_same_bytes_in_one_process_or_several(tmp_path, suites):
    # stages 3-5 write personas side by side (generate --workers): each persona's stream seed is drawn first, in
    # persona order, so the bytes are the same however many processes write them
    first = Path(suites[0].path)
    for workers in (1, 3):
        again = _make(tmp_path / f"w{workers}", 901, workers)
        for name in ("manifest.json", "personas.jsonl", "schedules.jsonl", "dialogues.jsonl", "qa.jsonl",
                     "README.md"):
            assert (again / name).read_bytes() == (first / name).read_bytes(), (workers, name)


def test_a_price_band_writes_amounts_of_its_size_in_the_persona_currency():
    # a bag of bread and a sofa must not cost the same: {price:small} and {price:big} draw from their bands
    r = Renderer(CAT, random.Random(3), "Ana", {"Ana"}, home_city="Leeds")
    asks = [Exchange(user="Fair?", assistant="Yes."), Exchange(user="Too much?", assistant="No.")]
    act = Act(context=["Got bread for {price:small} and a sofa for {price:big}.",
                       "Bread came to {price:small}, the sofa to {price:big}."], asks=asks)
    for _ in range(20):
        user, _ = r.render_act("k", [act])
        small, big = (float(x.replace(",", "")) for x in re.findall(r"£([\d,.]+)", user))
        assert small < 5 and big >= 180, user


def test_the_golds_rank_by_length_is_uniform_whatever_its_state(suites):
    # before the rule the gold was the longest option in 40% of seed 811's items (a learned length attack: 0.37)
    ranks: Counter[int] = Counter()
    for s in suites:
        for q in s.qa:
            gold = len(q.options[q.answer_index])
            ranks[sum(len(o) > gold for o in q.options)] += 1
    n = sum(ranks.values())
    assert n >= 2000
    for rank in range(4):
        assert 0.20 <= ranks[rank] / n <= 0.30, ranks


def test_the_length_draw_never_looks_at_which_option_is_gold():
    # a first version drew the wrong options around the gold's length: a text prior then scored 0.42 (simulated)
    
    from dimobench.suite.questions import QuestionMaker

    trait = next(t for tp in CAT.topics for t in tp.traits if t.trait_id == "pet_life")
    pools = {i: list(s.recommendations) for i, s in enumerate(trait.states)}
    for seed in range(20):
        drawn = []
        for gold in range(4):
            chosen = [("gold" if i == gold else "state", pools[i][0]) for i in range(4)]
            shown = {t: n % 3 for n, t in enumerate(t for i in range(4) for t in pools[i])}  # the weights bite
            maker = SimpleNamespace(rng=random.Random(seed), valid=True, shown=shown)
            maker._pick = lambda texts, cum=None, m=maker: QuestionMaker._pick(m, texts, cum)  # type: ignore[arg-type]
            maker._cum = lambda texts, m=maker: QuestionMaker._cum(m, texts)  # type: ignore[arg-type]
            out = QuestionMaker._rank_lengths(maker, chosen, pools)  # type: ignore[arg-type]
            assert [r for r, _ in out] == [r for r, _ in chosen]
            drawn.append([t for _, t in out])
        assert all(d == drawn[0] for d in drawn), drawn


def test_a_fixed_part_keeps_its_first_value_and_a_weekday_or_friend_occasion_is_told_once():
    # The blind read of seed 1341: a toddler "our son", later "our daughter"; a wake on Monday, later on Tuesday;
    # snorkel masks bought for Ethan, later the same purchase for Farah.
    asks = [Exchange(user=f"Question {i}?", assistant="Answer.") for i in range(6)]
    kid = Act(context=["Bedtime with {kid} is a battle.", "{kid} loves {toy}."], asks=asks)
    occasions = [Act(context=["The wake is on {weekday}.", "My knee hurts.", "My knee aches."], asks=asks),
                 Act(context=["Bought masks for {friend} and me.", "My back hurts.", "My back aches."], asks=asks)]
    parts = {"kid": ["our son", "our daughter", "our youngest"], "toy": ["blocks", "puzzles", "trains", "dolls"]}
    r = Renderer(CAT, random.Random(3), "Ana", {"Ana"}, home_city="Leeds")
    said = [r.render_act("kids", [kid], parts, fixed=["kid"])[0] for _ in range(12)]
    assert len({k for u in said for k in parts["kid"] if k in u.lower()}) == 1, said
    assert len({t for u in said for t in parts["toy"] if t in u}) > 1, said  # an ordinary part is drawn each time
    told = [r.render_act("occasions", occasions)[0] for _ in range(12)]
    assert sum("wake" in u for u in told) == 1 and sum("masks" in u for u in told) == 1, told


def test_the_contexts_of_a_once_act_tell_one_occasion_told_once_per_persona():
    # The blind read of seed 2401: one persona bought its one Swiss chronograph three times ("I paid ... for a
    # Swiss chronograph", "My new Swiss chronograph came in a wooden box", "I finally went for the Swiss
    # chronograph"): only the first had an occasion's slot, so the other two were told as if new.
    asks = [Exchange(user=f"Question {i}?", assistant="Answer.") for i in range(6)]
    watch = ["I finally went for the {watch} I'd wanted.", "My new {watch} came in a wooden box.",
             "The {watch} arrived with its papers."]
    habits = ["My knee hurts.", "My knee aches.", "My back hurts.", "My back aches."]
    parts = {"watch": ["gold dress watch", "steel diver's watch"]}
    said = {}
    for once in (False, True):
        acts = [Act(context=watch, asks=asks, once=once), Act(context=habits, asks=asks)]
        r = Renderer(CAT, random.Random(11), "Ana", {"Ana"}, home_city="Leeds")
        said[once] = [r.render_act("k", acts, parts, fixed=["watch"])[0] for _ in range(14)]
    assert sum("watch" in u for u in said[False]) >= 3, said[False]
    assert sum("watch" in u for u in said[True]) == 1, said[True]
    assert sum("hurts" in u or "aches" in u for u in said[True]) == 13


def test_months_before_and_after_the_turn_are_typed_slots():
    # seed 1441: "all the Christie books before {month}" written on 24 March read "before March"
    asks = [Exchange(user="Which first?", assistant="Start early."), Exchange(user="Any tips?", assistant="Yes.")]
    act = Act(context=["I want to finish the series by {later_month}.", "The crack has grown since {past_month}."],
              asks=asks)
    r = Renderer(CAT, random.Random(2), "Ana", {"Ana"}, home_city="Leeds")
    r.at("2024-03-24T10:00:00")
    said = [r.render_act("k", [act])[0] for _ in range(6)]
    assert any("by June" in u for u in said) and any("since December" in u for u in said), said
    assert not any("March" in u for u in said), said


def test_a_present_tense_time_of_day_is_the_part_of_the_day_the_turn_is_in_and_no_turn_repeats_behind_a_lead():
    # The blind read of seed 1481: "I'm setting it up for him this morning" at 22:12, and the same wine-list
    # question said twice, the second time after "Let me run something by you."
    asks = [Exchange(user="Any tips?", assistant="Yes."), Exchange(user="Thoughts?", assistant="Sure.")]
    act = Act(context=["I'm setting the phone up for Dad this {time_of_day}.", "Dad and I are clearing the shed "
                       "this {time_of_day}.", "Cleared the loft this {time_of_day}."], asks=asks)
    r = Renderer(CAT, random.Random(4), "Ana", {"Ana"}, home_city="Leeds")
    r.at("2024-06-16T22:12:00")
    said = [r.render_act("k", [act])[0] for _ in range(6)]
    present = [u for u in said if "setting" in u or "clearing" in u]
    assert present and all("this evening" in u for u in present), said
    bodies = [next((u[len(lead) + 1:] for lead in CAT.leads if u.startswith(lead + " ")), u) for u in said]
    assert len(set(bodies)) == len(bodies), said


def _strings(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def test_someone_is_an_unnamed_person_of_no_gender_that_varies_between_suites(suites):
    import json

    from dimobench.catalog import relation_gender

    files = [V3 / "templates.json", *sorted((V3 / "topics").glob("*.json"))]
    uses = [t for f in files for t in _strings(json.loads(f.read_text(encoding="utf-8"))) if "{someone}" in t]
    assert len(uses) >= 40, "fillers without a slot read the same in every suite"
    values = CAT.slots["someone"]
    assert len(values) >= 5 and all(relation_gender(v) is None and v == v.lower() for v in values)
    for text in uses:  # lower-case values: never where a sentence starts, except the text's own start
        assert not re.search(r"[.!?]\s+\{someone\}", text), text
    said = [t.user for s in suites for t in s.dialogues]
    found = Counter(v for t in said for v in values if v in t.lower())
    assert len(found) >= 4, found
    start = re.compile(rf"(^|[.!?]\s+)({'|'.join(map(re.escape, values))})")
    assert not [t for t in said if start.search(t)], "a sentence that starts lower-case"


def test_a_habit_of_ones_own_family_is_told_as_the_speakers_own():
    # seed 2231: "Years ago I whisked their partner and kids off", "my mum Elena weeded their father's garden"
    female = next(n for n, g in CAT.genders.items() if g == "f")
    male = next(n for n, g in CAT.genders.items() if g == "m")
    habit = "weeded their father's garden and fed their animals"
    assert habit_of(habit, CAT, None) == "weeded my father's garden and fed their animals"
    assert habit_of(habit, CAT, female) == "weeded her father's garden and fed their animals"
    assert habit_of(habit, CAT, male) == "weeded his father's garden and fed their animals"
    assert habit_of(habit, CAT, "Nobody-Recorded") == habit
    kin = [h for tp in CAT.topics for tr in tp.traits for st in tr.states for h in st.habits
           if re.search(r"\btheir (?:parents|mother|father|partner|spouse|siblings)", h)]
    kin_pattern = re.compile(r"\btheir (?:parents|mother|father|partner|spouse|siblings)")
    assert len(kin) >= 8 and not [h for h in kin if kin_pattern.search(habit_of(h, CAT, None))]


def test_a_persona_that_does_not_hold_the_commute_trait_still_gets_about_one_way(suites):
    # seed 2231: a hybrid worker who took the train in on office days and drove home after night shifts
    from dimobench.catalog import barred_pattern

    commute = CAT.trait("commute_mode")
    assert commute.background
    checked = 0
    for s in suites:
        for p in s.personas:
            held = {t.trait_id for t in p.traits}
            background = p.profile.get("background")
            if "commute_mode" in held:
                assert not background or "commute_mode" not in background
                continue
            state = next(st for st in commute.states if st.state_id == background["commute_mode"])
            barred = barred_pattern(frozenset(state.excludes))
            # and of the ways of getting about, it bars the fewest of what the persona's own traits say (the review
            # of this rule: a walker's background redrew "a forty-minute drive home" from a night worker's cues)
            own = [x for t in p.traits for st in CAT.trait(t.trait_id).states for a in st.acts
                   for x in (*a.context, *(e.user for e in a.asks), *(r for e in a.asks for r in e.replies()))]

            clashes = {st.state_id: sum(1 for x in own if barred_pattern(frozenset(st.excludes)).search(x))
                       for st in commute.states}
            assert clashes[state.state_id] == min(clashes.values()), (p.persona_id, state.state_id, clashes)
            said = [t.user for t in s.dialogues if t.persona_id == p.persona_id and t.annotation
                    and t.annotation.kind in ("cue", "filler") and barred and barred.search(t.user)]
            assert said == [], (p.persona_id, state.state_id, said[:3])
            checked += 1
    assert checked >= 3


def test_catalog_v3_binds_the_persona_city_under_the_default_qa_rules_too(tmp_path: Path):
    import json

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DIMOBENCH_CATALOG", str(V3))
        path = generate(tmp_path / "v1rules", personas=2, turns=300, drifts=1, seed=44)  # qa_rules v1
    suite = load_suite(path)
    assert suite.manifest.config.get("qa_rules", "v1") == "v1"
    home = {p.persona_id: str(p.profile["city"]) for p in suite.personas}
    assert any(home[t.persona_id] in t.user for t in suite.dialogues), "no turn names the home city"
    lints = json.loads(json.dumps(audit_suite(path, reference=0).lints))
    assert not lints["foreign_home_city"] and not lints["city_mismatch"], lints


def _body(user: str) -> str:
    """A turn without its lead, cut to its first sentence (a context told again shows there)."""
    for lead in sorted(CAT.leads + CAT.trial_leads, key=len, reverse=True):
        if user.startswith(lead + " "):
            user = user[len(lead) + 1:]
            break
    return re.split(r"(?<=[.!?])\s", user)[0]


def test_no_state_tells_a_story_twice_and_a_trial_lead_marks_no_change(suites):
    # The blind read of seed 2811: a new state's few stories told two and three times within twenty turns
    # ("Goldie's Timeless came up on my phone on the bus" at turns 182, 199 and 202), and each drift's first
    # tries found by their leads alone ("Small experiment:" opened only the new state's first cues).
    repeated = cues = 0
    trials: Counter[str] = Counter()
    for s in suites:
        for persona, sched in zip(s.personas, s.schedules):
            seen: set[str] = set()
            for t in s.turns_of(persona.persona_id):
                a = t.annotation
                if a is None or a.kind != "cue":
                    continue
                cues += 1
                body = _body(t.user)
                repeated += body in seen
                seen.add(body)
                if any(t.user.startswith(lead + " ") for lead in CAT.trial_leads):
                    onset = any(d.trait_id == a.trait_id and d.to_state == a.state_id
                                and d.onset_turn <= t.turn <= d.change_point_turn for d in sched.drifts)
                    trials["first try" if onset else "other"] += 1
    assert repeated <= 0.01 * cues, (repeated, cues)
    # about as many trial leads open other cues as open the drifts' first tries
    assert trials["first try"] >= 2 and trials["other"] >= 2, trials


def test_sessions_start_at_hours_the_persona_sleep_allows():
    # The blind read of seed 2811: a lark "asleep by 9pm" chatting from 21:57 to 22:20.
    from dimobench.generate.clock import SLEEP_HOURS
    from dimobench.generate.config import make_config
    from dimobench.generate.stages import dialogue, drift, personas
    from dimobench.suite.schema import State, Trait

    cfg = make_config("dimobench", seed=905, qa_rules="valid")
    rng = random.Random(905)
    people = personas.run(cfg, CAT, rng).personas[:2]
    scheds = drift.run(cfg, drift.Inputs(catalog=CAT, personas=people), rng).schedules
    sleep = CAT.trait("sleep_schedule")
    topic = next(tp.topic for tp in CAT.topics if any(tr.trait_id == "sleep_schedule" for tr in tp.traits))
    hours: dict[str, set[int]] = {}
    for state in ("early_riser", "night_owl"):
        lark = people[0].model_copy(deep=True)
        moving = {d.trait_id for d in scheds[0].drifts}
        keep = [tr for tr in lark.traits if tr.trait_id != "sleep_schedule" and tr.trait_id not in moving][1:]
        lark.traits = [*[tr for tr in lark.traits if tr.trait_id in moving], *keep,
                       Trait(trait_id="sleep_schedule", topic=topic, initial_state=state,
                             states=[State(state_id=s.state_id, description=s.description) for s in sleep.states])]
        out = dialogue.run(cfg, dialogue.Inputs(catalog=CAT, personas=[lark], schedules=scheds[:1]),
                           random.Random(1))
        starts = [t for i, t in enumerate(out.turns) if i == 0 or t.session != out.turns[i - 1].session]
        assert {int(t.timestamp[11:13]) for t in starts[1:]} <= set(SLEEP_HOURS[state]), state
        hours[state] = {int(t.timestamp[11:13]) for t in out.turns}
    assert max(hours["early_riser"]) <= 20 and max(hours["night_owl"]) >= 22, hours
    plain = dialogue.run(cfg, dialogue.Inputs(catalog=CAT, personas=people[1:2], schedules=scheds[1:2]),
                         random.Random(1))
    assert "sleep_schedule" in {tr.trait_id for tr in people[1].traits} or \
        max(int(t.timestamp[11:13]) for t in plain.turns) >= 21


def test_a_present_part_of_the_day_is_not_told_late_at_night():
    # The blind read of seed 2811: "Marco and I are doing the flea market at the docks this evening" at 23:38.
    act = Act(context=["{friend} and I are doing the flea market this {time_of_day}.",
                       "I found a brass bell at the antiques centre."],
              asks=[Exchange(user="Any tips?", assistant="Go early."),
                    Exchange(user="What should I bring?", assistant="Cash.")])
    for stamp, allowed in (("2024-06-16T23:38:00", False), ("2024-06-17T05:40:00", False),
                           ("2024-06-16T19:10:00", True)):
        said = []
        for seed in range(6):
            r = Renderer(CAT, random.Random(seed), "Ana", {"Ana"}, home_city="Leeds")
            r.at(stamp)
            said.append(r.render_act("k", [act])[0])
        assert any("flea market" in u for u in said) == allowed, (stamp, said)


def test_seasonal_words_of_the_blind_read_fit_their_months():
    from dimobench.catalog import at_hour, in_season

    for text, bad, good in (("There's a poster at the library about the summer solstice.", 12, 6),
                            ("I'm on my feet for ten hours at the festival on Saturday.", 11, 7),
                            ("I taped foil behind the radiators and pushed an old towel against the draughty door.",
                             6, 1),
                            ("The chimney sweep is coming before I fire up the wood burner again.", 7, 10)):
        assert not in_season(text, bad) and in_season(text, good), text
    # the blind read of seed 2871: a double rainbow after the shower at 20:54 in March
    assert not at_hour("There's a double rainbow over the houses opposite after the shower.", 20)
    assert at_hour("There's a double rainbow over the houses opposite after the shower.", 17)
    # not the sky (session 32's lint on a suite of seed 2864: soap bubbles at 20:39)
    assert at_hour("I was washing up and noticed rainbow swirls on the soap bubbles.", 20)


def test_no_one_the_user_mentions_is_a_partner_of_their_own():
    # The blind read of seed 2871: "my husband" in the user's own turns and "my partner Mei", someone whose
    # habits the user "found out" about, in the same dialogue.
    assert "partner" not in CAT.relations


def test_the_quick_start_suite_has_no_lint(tmp_path: Path):
    # Session 32: a cue with nothing new to tell became a filler that still said what the cued state bars (a
    # dumbphone user asking about an authenticator app, a night owl told of the 'morning star' before dawn),
    # and the quick start's card failed on two `state_clash` lints.
    from dimobench.audit.lints import lints

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DIMOBENCH_CATALOG", str(V3))
        suite = load_suite(generate(tmp_path / "xl", turns=1050, drifts=3, seed=7, qa_rules="valid"))
    found = {k: v for k, v in lints(suite, CAT).items() if v}
    assert not found, found


def test_a_distant_past_of_one_trait_is_not_recalled_again_soon(suites):
    # the blind read of seed 2871: "years ago I ..." of one trait on consecutive turns; seed 2901 had 8 recalls
    # within 60 turns of the last one of their trait, XL seed 7 three within 3 turns
    from dimobench.generate.stages.confounders import PAST_GAP

    recalls = 0
    for s in suites:
        last: dict[tuple[str, str], int] = {}
        for t in s.dialogues:
            if t.annotation and t.annotation.kind == "decoy" and t.annotation.trait_id:
                key = (t.persona_id, t.annotation.trait_id)
                assert key not in last or t.turn - last[key] >= PAST_GAP, (key, last[key], t.turn)
                last[key] = t.turn
                recalls += 1
    assert recalls >= 20


def test_a_trial_lead_on_a_state_not_new_to_the_user_fits_a_habit_held_for_years(suites):
    # the blind read of seed 2891: "Never done this before." on a cue of a state held all along read as a change
    habit = set(CAT.habit_trial_leads)
    assert habit and habit < set(CAT.trial_leads)
    others = firsts = 0
    for s in suites:
        for p in s.personas:
            initial = {t.trait_id: t.initial_state for t in p.traits}
            drifts = [d for sc in s.schedules if sc.persona_id == p.persona_id for d in sc.drifts]
            for t in s.dialogues:
                a = t.annotation
                lead = next((x for x in CAT.trial_leads if t.persona_id == p.persona_id and t.user.startswith(x + " ")),
                            None)
                if lead is None or not a or a.kind != "cue":
                    continue
                drifting = any(d.trait_id == a.trait_id and d.onset_turn <= t.turn <= d.change_point_turn
                               for d in drifts)
                if not drifting and a.state_id == initial[a.trait_id]:
                    others += 1
                    assert lead in habit, (t.turn, t.user)
                elif lead not in habit:
                    firsts += 1
    assert others >= 3 and firsts >= 3, (others, firsts)
