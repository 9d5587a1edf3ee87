"""Contradiction verifiers: rule, shipped head, relatedness gate, and the encoder/NLI report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from precomem import PreCoMem, PreCoMemConfig
from precomem.encoders import HashingEncoder
from precomem.nli import HeadVerifier, RuleVerifier, cross_encoder_path, gated_contradiction, head_path
from precomem.nli import rule_contradiction as rule


def test_rule_flags_negation_and_antonyms_over_shared_content() -> None:
    assert rule("I throw loud parties every weekend", "I can't stand loud parties anymore") >= 0.85
    assert rule("I love hiking", "I hate hiking") >= 0.85
    assert rule("I love hiking", "I have a dog") == 0.0
    assert rule("I throw loud parties every weekend", "Another loud party this weekend") == 0.0


def test_relatedness_gate_zeroes_unrelated_pairs() -> None:
    enc = HashingEncoder()
    prem, hyp = ["I love hiking in the hills"], ["I don't have a car"]
    u, v = enc.encode(prem), enc.encode(hyp)
    assert gated_contradiction(RuleVerifier(), prem, hyp, u, v, enc)[0] == 0.0


def test_shipped_head_loads_and_reports_accuracy() -> None:
    path = head_path()
    assert path.is_file() and path.stat().st_size < 1_000_000
    head = HeadVerifier(path)
    assert head.test_accuracy > 0.7 and head.temperature > 0
    rng = np.random.default_rng(0)
    u = rng.normal(size=(3, 384)).astype(np.float32)
    p = head.contradiction(["a", "b", "c"], ["d", "e", "f"], u, u)
    assert p.shape == (3,) and ((0 <= p) & (p <= 1)).all()


def test_encoders_report_what_ran(make_mem: Callable[..., PreCoMem], encoder_kind: str) -> None:
    mem = make_mem()
    mem.observe("I throw loud parties every weekend", turn=1)
    enc = mem.stats()["encoders"]
    if encoder_kind == "hashing":
        assert enc == {"embedding": "hashing", "nli": "rule", "agents": "rule"}
    else:
        assert enc["embedding"] == "minilm" and enc["nli"] == "minilm-head+rule"


def test_cross_encoder_is_looked_up_in_the_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIMOBENCH_CACHE_DIR", str(tmp_path))
    assert cross_encoder_path() == tmp_path / "models" / "nli-cross-encoder"


def test_explicit_model_choice_that_cannot_run_fails_loudly() -> None:
    mem = PreCoMem(PreCoMemConfig(encoder="hashing", nli="head"))
    with pytest.raises(FileNotFoundError):
        mem.stats()
