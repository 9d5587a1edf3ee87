"""The shared offline answerer on hand-made memories with known answers (real MiniLM embeddings)."""

from __future__ import annotations

import pytest

from dimobench.embed import get_embedder
from dimobench.evaluate.answerer import OfflineAnswerer
from dimobench.evaluate.protocol import Recalled

SLEEP_OPTIONS = ["Afternoon naps dozing on the sofa", "Testing a new memory foam mattress",
                 "Sunrise starts and early breakfasts", "Late-night projects past midnight"]
NIGHT_OWL = ("up well past midnight, rising near noon; stayed up until 3am and slept till noon; ate breakfast at noon "
             "after a late night; coded from midnight until the small hours")
GYM = "lifts weights at the gym several times weekly; chased a new deadlift record every month"
FAMILY = "sees kin mostly at big annual occasions; flew home once a year for Christmas"
SOCIAL = "plays five-a-side football after work with coworkers every Thursday"
SHIFT_OPTIONS = ["Afternoon naps dozing on the sofa", "Night shifts at work, sleeping through the day",
                 "Sunrise starts and early breakfasts", "Late-night projects past midnight"]
EARLY = "up at dawn before the alarm; finished breakfast before seven every day; asleep by nine"
NAP = "dozed off on the sofa after lunch again; a long nap in the afternoon"
BEFORE = "Before things shifted, what was Lukas's sleep schedule like?"


@pytest.fixture(scope="module")
def answerer() -> OfflineAnswerer:
    # MiniLM by name: other tests set the process-wide default embedder to the hashing fallback
    return OfflineAnswerer(get_embedder("minilm"))


def _items(*pairs: tuple[str, float, int]) -> list[Recalled]:
    return [Recalled(text=t, score=s, source_turns=[turn]) for t, s, turn in pairs]


def test_one_clause_sharing_a_word_does_not_outvote_the_item(answerer: OfflineAnswerer) -> None:
    # "ate breakfast at noon" shares "breakfast" with the early-riser option; the item as a whole is a night owl
    choice = answerer.choose("When does Lukas typically sleep and wake?", SLEEP_OPTIONS, _items((NIGHT_OWL, 1.0, 40)))
    assert SLEEP_OPTIONS[choice.index] == "Late-night projects past midnight"
    assert choice.mode == "context"


def test_items_about_other_things_do_not_decide(answerer: OfflineAnswerer) -> None:
    options = ["Squats, deadlifts and bench press sessions", "Pilates and a calm evening stretch",
               "Trail running and half marathon training", "Salsa dance classes twice a week"]
    items = _items((FAMILY, 1.0, 50), (SOCIAL, 1.0, 50), (GYM, 1.0, 50))
    choice = answerer.choose("Which fitness routine best matches Yara right now?", options, items)
    assert options[choice.index].startswith("Squats")


def test_choice_follows_the_option_not_its_position(answerer: OfflineAnswerer) -> None:
    items = _items((NIGHT_OWL, 1.0, 40), (GYM, 0.8, 40))
    first = answerer.choose("What is Lukas's sleep like?", SLEEP_OPTIONS, items)
    reordered = SLEEP_OPTIONS[::-1]
    second = answerer.choose("What is Lukas's sleep like?", reordered, items)
    assert SLEEP_OPTIONS[first.index] == reordered[second.index]


@pytest.mark.parametrize("rule", ["contrast", "exclude"])
def test_question_about_before_takes_the_older_state(rule: str) -> None:
    answerer = OfflineAnswerer(get_embedder("minilm"), past_rule=rule)
    # v5 (contrast) needs options that are all answers to the question, as a suite's are (issue 15): an option
    # nothing supports ("a new mattress") rises when the newer items reject it most; v4 excluded the current
    # state and took the best of the rest
    options = SLEEP_OPTIONS if rule == "exclude" else SHIFT_OPTIONS
    early = "up at dawn before the alarm; finished breakfast before seven every day; asleep by nine"
    items = _items((NIGHT_OWL, 1.0, 300), (early, 0.4, 120))
    now = answerer.choose("When does Lukas sleep and wake at the moment?", options, items)
    before = answerer.choose("Before things shifted, what was Lukas's sleep schedule like?", options, items)
    assert options[now.index] == "Late-night projects past midnight"
    assert options[before.index] == "Sunrise starts and early breakfasts"
    assert before.mode == "past"




def test_a_recent_item_of_a_third_state_does_not_push_the_old_state_out(answerer: OfflineAnswerer) -> None:
    # v4 took the option the newest items supported as the current state and excluded it: the one nap at turn
    # 280 made "naps" the current state, and of the rest it picked night shifts; v5 weighs what the older items
    # show against what the newer ones show
    items = [Recalled(NIGHT_OWL, 1.0, [300]), Recalled(NAP, 0.6, [280]), Recalled(EARLY, 0.5, [120]),
             Recalled(EARLY, 0.4, [140])]
    assert SHIFT_OPTIONS[answerer.choose(BEFORE, SHIFT_OPTIONS, items).index] == "Sunrise starts and early breakfasts"
    v4 = OfflineAnswerer(get_embedder("minilm"), past_rule="exclude")
    assert v4.version == "4" and answerer.version == "5"
    assert SHIFT_OPTIONS[v4.choose(BEFORE, SHIFT_OPTIONS, items).index] != "Sunrise starts and early breakfasts"


def test_a_memory_is_dated_by_the_turn_it_was_first_said(answerer: OfflineAnswerer) -> None:
    # a belief first said at turn 100 and supported again at 295 still tells of the time before the change
    items = [Recalled(NIGHT_OWL, 1.0, [300]), Recalled(EARLY, 0.9, [100, 295]), Recalled(NIGHT_OWL, 0.8, [200])]
    choice = answerer.choose(BEFORE, SHIFT_OPTIONS, items)
    assert SHIFT_OPTIONS[choice.index] == "Sunrise starts and early breakfasts"
    assert choice.mode == "past" and max(choice.support) == choice.support[choice.index]


def test_items_that_cannot_be_ordered_in_time_give_the_second_best(answerer: OfflineAnswerer) -> None:
    same_time = [Recalled(NIGHT_OWL, 1.0, [300]), Recalled(NIGHT_OWL, 0.5, [300])]
    now = answerer.choose("What is Lukas's sleep like?", SHIFT_OPTIONS, same_time)
    before = answerer.choose(BEFORE, SHIFT_OPTIONS, same_time)
    assert before.mode == "past" and before.index != now.index
    assert sorted(before.support, reverse=True)[1] == before.support[before.index]


def test_the_v4_rule_is_a_named_answerer() -> None:
    from dimobench.evaluate.gloss import GlossAnswerer, make_offline_answerer

    embedder = get_embedder("hashing")
    for kind, cls, rule in [("offline", OfflineAnswerer, "contrast"), ("offline-v4", OfflineAnswerer, "exclude"),
                            ("gloss", GlossAnswerer, "contrast"), ("gloss-v4", GlossAnswerer, "exclude")]:
        made = make_offline_answerer(kind, embedder)
        assert type(made) is cls and made.describe()["past_rule"] == rule
    with pytest.raises(ValueError, match="past_rule"):
        OfflineAnswerer(embedder, past_rule="latest")


def test_nothing_recalled_scores_options_against_the_question_alone(answerer: OfflineAnswerer) -> None:
    choice = answerer.choose("When does Lukas sleep?", SLEEP_OPTIONS, [])
    assert choice.mode == "no_context"
    assert len(choice.support) == len(SLEEP_OPTIONS)


def test_the_clause_that_names_the_option_is_not_drowned(answerer: OfflineAnswerer) -> None:
    # the remote worker's habits share "desk" and "room" with the office options; one clause names the Zoom calls
    remote = ("works remotely from a spare room at home; joined every meeting by video call from home; worked from "
              "a desk in the spare room; took Zoom calls at the kitchen table; logged on from home in slippers")
    options = ["Swiping into an open-plan office at nine", "On parental leave with a newborn baby",
               "Slack and Zoom calls with a scattered team", "Chasing unpaid invoices from several different clients"]
    choice = answerer.choose("How does Julia earn a living right now?", options, _items((remote, 1.0, 200)))
    assert options[choice.index] == "Slack and Zoom calls with a scattered team"
    # by a clear margin over the office (the clause mean alone had them 0.001 apart)
    assert choice.support[2] - choice.support[0] > 0.1
