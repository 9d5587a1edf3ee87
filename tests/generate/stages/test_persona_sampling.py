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
