"""The shipped catalog is big and clean enough to generate readable, implicit dialogues from."""

from __future__ import annotations

from dimobench.catalog import load_catalog
from dimobench.catalog_rules import check_catalog


def test_catalog_breaks_no_rule() -> None:
    assert check_catalog(load_catalog()) == []


def test_catalog_meets_the_minimum_sizes() -> None:
    cat = load_catalog()
    assert len(cat.topics) >= 12
    for tp in cat.topics:
        for tr in tp.traits:
            assert 2 <= len(tr.states) <= 4
            for st in tr.states:
                assert len(st.cues) >= 20, (tr.trait_id, st.state_id)
    assert len(cat.filler) >= 150
    assert sum(len(tp.chatter) for tp in cat.topics) >= 60
    assert len(cat.entity) >= 40
    assert len(cat.decoy) >= 20


def test_cues_never_name_their_state() -> None:
    cat = load_catalog()
    for tp in cat.topics:
        for tr in tp.traits:
            for st in tr.states:
                label = st.state_id.replace("_", " ").lower()
                for ex in st.cues:
                    assert label not in ex.user.lower(), (st.state_id, ex.user)
