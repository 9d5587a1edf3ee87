from __future__ import annotations

from dimobench.catalog import load_catalog
from dimobench.generate.config import make_config
from dimobench.generate.stages import personas
from dimobench.rng import derive_rng


def test_personas_have_distinct_names_topics_and_entities() -> None:
    cfg = make_config(personas=8, traits=8, seed=5)
    out = personas.run(cfg, load_catalog(), derive_rng(5, "personas")).personas
    assert len({p.name for p in out}) == 8
    for p in out:
        assert len(p.traits) == 8
        assert len({t.topic for t in p.traits}) == 8
        assert 3 <= len(p.entities) <= 5
        assert p.name.split()[0] not in {e.name for e in p.entities}
        for t in p.traits:
            assert t.initial_state in {s.state_id for s in t.states}
            assert 2 <= len(t.states) <= 4
        assert {"age", "occupation", "city"} <= set(p.profile)


def test_no_two_people_of_a_v3_persona_have_names_that_look_alike() -> None:
    # a reader (and an LLM answerer) told "Leila" from "Laila" by one letter (blind read of seed 2547)
    from itertools import combinations

    from dimobench.catalog import find_catalog

    catalog = load_catalog(str(find_catalog("catalog-v3")))
    for seed in (1, 2, 3, 4):
        cfg = make_config(personas=8, seed=seed, qa_rules="valid")
        for p in personas.run(cfg, catalog, derive_rng(seed, "personas")).personas:
            names = [p.name.split()[0], *(e.name for e in p.entities), *p.profile["friends"]]
            assert len(names) >= 9
            assert [(a, b) for a, b in combinations(names, 2) if personas.confusable(a, b)] == [], p.persona_id


def test_names_that_look_alike() -> None:
    alike = [("Leila", "Laila"), ("Sara", "Yara"), ("Felipe", "Felix"), ("Ana", "Anna"), ("Tom", "tom")]
    apart = [("Sara", "Omar"), ("Leila", "Lucas"), ("Felix", "Oscar"), ("Ana", "Ivan")]
    assert all(personas.confusable(a, b) and personas.confusable(b, a) for a, b in alike)
    assert not any(personas.confusable(a, b) for a, b in apart)
