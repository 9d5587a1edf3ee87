"""Drift schedules: non-overlapping drifts, phases tiling the timeline, stable traits left alone."""

from __future__ import annotations

import pytest

from dimobench.catalog import load_catalog
from dimobench.generate.config import make_config
from dimobench.generate.stages import drift, personas
from dimobench.rng import derive_rng


@pytest.mark.parametrize("turns,drifts", [(120, 1), (350, 1), (700, 2), (1050, 3)])
def test_phases_tile_and_drifts_do_not_overlap(turns: int, drifts: int) -> None:
    cfg = make_config(turns=turns, drifts=drifts, seed=3)
    ps = personas.run(cfg, load_catalog(), derive_rng(3, "personas")).personas
    out = drift.run(cfg, drift.Inputs(personas=ps), derive_rng(3, "drift"))
    for persona, sched in zip(ps, out.schedules):
        assert len(sched.drifts) == drifts
        covered = [t for ph in sched.phases for t in range(ph.start_turn, ph.end_turn + 1)]
        assert covered == list(range(1, turns + 1))
        assert sched.phases[0].phase == "stable"
        for d in sched.drifts:
            phases = {ph.phase for ph in sched.phases if ph.drift_id == d.drift_id}
            assert {"transition", "post_change", "maintenance"} <= phases
            assert d.from_state != d.to_state
        ends = [(d.onset_turn, d.settle_turn) for d in sched.drifts]
        assert all(a[1] < b[0] for a, b in zip(ends, ends[1:]))
        drifted = {d.trait_id for d in sched.drifts}
        assert len(persona.traits) - len(drifted) >= drift.STABLE_TRAITS_MIN


def test_a_trait_can_drift_twice_and_chains_states() -> None:
    cfg = make_config(turns=1050, drifts=3, seed=0, personas=20)
    ps = personas.run(cfg, load_catalog(), derive_rng(0, "personas")).personas
    out = drift.run(cfg, drift.Inputs(personas=ps), derive_rng(0, "drift"))
    chained = 0
    for sched in out.schedules:
        for a, b in zip(sched.drifts, sched.drifts[1:]):
            if a.trait_id == b.trait_id:
                assert b.from_state == a.to_state
                chained += 1
    assert chained > 0
