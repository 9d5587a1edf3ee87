"""Reliability: diffuse retrieval lowers rho and so effective surprisal; rho alone never triggers an
update."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from precomem import PreCoMem, PreCoMemConfig
from precomem.surprisal import gate, raw_surprisal, reliability, score_weights

ORDER = {"MAINTAIN": 0, "PROFILE": 1, "CORRECT": 2}


def test_flat_scores_are_unreliable_and_peaked_scores_reliable() -> None:
    cfg = PreCoMemConfig()
    flat = reliability(score_weights(np.full(10, 0.4), cfg.reliability_temperature), 10)
    peaked = reliability(score_weights(np.array([0.9] + [0.1] * 9), cfg.reliability_temperature), 10)
    assert flat == pytest.approx(0.0, abs=1e-9)
    assert peaked > 0.9
    assert reliability(np.array([1.0]), 10) == 1.0
    two = reliability(score_weights(np.array([0.5, 0.5]), cfg.reliability_temperature), 10)
    assert two == pytest.approx(1 - math.log(2) / math.log(10))


@pytest.mark.parametrize("seed", range(5))
def test_reliability_can_only_defer_never_trigger(seed: int) -> None:
    cfg = PreCoMemConfig()
    rng = np.random.default_rng(seed)
    for _ in range(200):
        raw = raw_surprisal(float(rng.random()), float(rng.random()), cfg)
        rho = float(rng.random())
        assert ORDER[gate(rho * raw, cfg)] <= ORDER[gate(raw, cfg)]
    assert gate(0.0, cfg) == "MAINTAIN"  # no surprisal: no update beyond reinforcement, whatever rho


def test_diffuse_store_damps_effective_surprisal(make_mem: Callable[..., PreCoMem]) -> None:
    # Ten near-identical beliefs give flat scores for a query about them; one gives a peaked score.
    texts = [
        f"I water the plants on the balcony every {d}"
        for d in (
            "monday",
            "tuesday",
            "wednesday",
            "thursday",
            "friday",
            "saturday",
            "sunday",
            "morning",
            "evening",
            "night",
        )
    ]
    query = "I no longer water the plants on the balcony"
    diffuse = make_mem(duplicate_similarity=1.01, support_similarity=1.01, gamma=0.0)
    for i, t in enumerate(texts, start=1):
        diffuse.observe(t, turn=i)
    focused = make_mem(gamma=0.0)
    focused.observe(texts[0], turn=1)
    ud = diffuse.observe(query, turn=20)
    uf = focused.observe(query, turn=20)
    assert ud.reliability < uf.reliability
    raw_d = raw_surprisal(ud.deviation, ud.contradiction, diffuse.config)
    assert ud.surprisal == pytest.approx(ud.reliability * raw_d, abs=1e-6)
    assert ud.surprisal < raw_d
    no_rel = make_mem(no_reliability=True, duplicate_similarity=1.01, support_similarity=1.01, gamma=0.0)
    for i, t in enumerate(texts, start=1):
        no_rel.observe(t, turn=i)
    assert no_rel.observe(query, turn=20).reliability == 1.0
