"""The shared offline answerer on hand-made memories with known answers (real MiniLM embeddings)."""

from __future__ import annotations

import pytest

from dimobench.evaluate.answerer import OfflineAnswerer
from dimobench.evaluate.embed import get_embedder
from dimobench.evaluate.protocol import Recalled

SLEEP_OPTIONS = ["Afternoon naps dozing on the sofa", "Testing a new memory foam mattress",
                 "Sunrise starts and early breakfasts", "Late-night projects past midnight"]
NIGHT_OWL = ("up well past midnight, rising near noon; stayed up until 3am and slept till noon; ate breakfast at noon "
             "after a late night; coded from midnight until the small hours")
GYM = "lifts weights at the gym several times weekly; chased a new deadlift record every month"
FAMILY = "sees kin mostly at big annual occasions; flew home once a year for Christmas"
SOCIAL = "plays five-a-side football after work with coworkers every Thursday"


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


def test_question_about_before_takes_the_older_state(answerer: OfflineAnswerer) -> None:
    early = "up at dawn before the alarm; finished breakfast before seven every day; asleep by nine"
    items = _items((NIGHT_OWL, 1.0, 300), (early, 0.4, 120))
    now = answerer.choose("When does Lukas sleep and wake at the moment?", SLEEP_OPTIONS, items)
    before = answerer.choose("Before things shifted, what was Lukas's sleep schedule like?", SLEEP_OPTIONS, items)
    assert SLEEP_OPTIONS[now.index] == "Late-night projects past midnight"
    assert SLEEP_OPTIONS[before.index] == "Sunrise starts and early breakfasts"
    assert before.mode == "past"


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
