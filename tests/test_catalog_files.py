"""Every trait file of every shipped catalog keeps the catalog rules; catalog-v3 has the size issue 16 asks for."""

from __future__ import annotations

import json

import pytest

from dimobench.catalog import TopicEntry, find_catalog, load_catalog, shipped_catalogs
from dimobench.catalog_rules import check_catalog, check_topic, word_problems
from dimobench.resources import resource_dir

CATALOGS = [str(resource_dir("data")), *(str(find_catalog(n)) for n in shipped_catalogs())]
V3_FILES = sorted((resource_dir("data") / "catalog-v3" / "topics").glob("*.json"))


@pytest.mark.parametrize("root", CATALOGS)
def test_every_shipped_catalog_breaks_no_rule(root):
    assert check_catalog(load_catalog(root)) == []


@pytest.mark.parametrize("path", V3_FILES, ids=[p.stem for p in V3_FILES])
def test_every_v3_trait_file_keeps_the_wording_rules_and_sizes(path):
    topic = TopicEntry.model_validate(json.loads(path.read_text(encoding="utf-8")))
    assert check_topic(topic) + word_problems(topic) == []
    assert len(topic.keywords) >= 8 and len(topic.chatter) >= 10
    for tr in topic.traits:
        assert len(tr.states) == 4, tr.trait_id
        assert len(tr.current_questions) >= 4 and len(tr.inference_questions) >= 4, tr.trait_id
        for st in tr.states:
            assert not st.cues and len(st.acts) >= 8, st.state_id
            assert len(st.answers) >= 8 and len(st.recommendations) >= 6 and len(st.habits) >= 5, st.state_id
            assert all(len(a.context) >= 2 and len(a.asks) >= 2 for a in st.acts), st.state_id


def test_catalog_v3_has_30_traits_over_20_topics_and_typed_records():
    cat = load_catalog(str(find_catalog("catalog-v3")))
    assert cat.text_rules == "v3"
    assert len(cat.topics) >= 20
    assert sum(len(tp.traits) for tp in cat.topics) >= 30
    assert len(cat.leads) >= 25 and len(cat.filler_acts) >= 100
    assert set(cat.genders) >= set(cat.first_names) and set(cat.currencies) >= set(cat.cities)
    assert set(cat.occupation_tags) >= set(cat.occupations)
    needed = {tag for tp in cat.topics for tr in tp.traits for tag in tr.requires}
    assert all(any(tag in tags for tags in cat.occupation_tags.values()) for tag in needed)
