"""Contradiction verifiers behind a relatedness gate.

Order of preference (``nli="auto"``): a sentence-transformers cross-encoder the user saved at
:func:`cross_encoder_path` (nothing downloads one), the small MLP head on frozen MiniLM features shipped in
``precomem/models/nli_head.npz``, and a
negation/antonym rule that needs no model. The rule also runs beside either model and the larger probability
wins: it is precise on explicit reversals ("love" vs "can't stand"), which SNLI-trained heads handle poorly.
SNLI calls unrelated sentences contradictions, so pairs below the encoder's relatedness cosine score 0 and a
model's probability only counts in full for clearly related pairs (see :func:`gated_contradiction`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Protocol

import numpy as np

from precomem.config import PreCoMemConfig
from precomem.encoders import Encoder, tokenize

LABELS = ("entailment", "neutral", "contradiction")
CROSS_ENCODER_DIRNAME = "nli-cross-encoder"
"""Directory name of the user-built cross-encoder under ``<cache>/models/``."""

_NEG = re.compile(
    r"\b(not|never|no longer|anymore|any more|stopped|quit|gave up|give up|avoid\w*|can'?t stand|"
    r"cannot stand|don'?t|doesn'?t|didn'?t|won'?t|isn'?t|aren'?t|wasn'?t|hate\w*|dislike\w*|no)\b",
    re.IGNORECASE,
)
_ANTONYMS = {
    "love": "hate",
    "like": "dislike",
    "enjoy": "hate",
    "always": "never",
    "start": "stop",
    "more": "less",
    "loud": "quiet",
    "early": "late",
    "often": "rarely",
    "many": "few",
    "busy": "calm",
    "happy": "sad",
    "healthy": "unhealthy",
    "indoor": "outdoor",
    "alone": "together",
    "city": "countryside",
}
_ANTONYMS.update({v: k for k, v in list(_ANTONYMS.items())})
_STANCE = set(_ANTONYMS) | {"not", "never", "no", "anymore", "avoid", "stand", "quit", "stopped", "every"}


def _stem(word: str) -> str:
    # Crude suffix stripping is enough to match party/parties, hike/hiking across a premise and a hypothesis.
    for suf in ("ies", "ing", "ed", "es", "s"):
        if word.endswith(suf) and len(word) - len(suf) >= 3:
            return word[: -len(suf)] + ("y" if suf == "ies" else "")
    return word


def rule_contradiction(premise: str, hypothesis: str) -> float:
    """Probability-like score from a negation flip or an antonym pair over shared content words."""
    a = {_stem(t) for t in tokenize(premise)} - _STANCE
    b = {_stem(t) for t in tokenize(hypothesis)} - _STANCE
    if not a & b:
        return 0.0
    if bool(_NEG.search(premise)) != bool(_NEG.search(hypothesis)):
        return 0.9
    wa, wb = set(tokenize(premise)), set(tokenize(hypothesis))
    if any(_ANTONYMS.get(w) in wb and w not in wb for w in wa):
        return 0.85
    return 0.0


class Verifier(Protocol):
    """Contradiction probability for aligned (premise, hypothesis) rows."""

    name: str

    def contradiction(self, prem: list[str], hyp: list[str], u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Return P(contradiction) per row; ``u``/``v`` are the rows' embeddings."""
        ...


class RuleVerifier:
    """Negation/antonym rule only."""

    name = "rule"

    def contradiction(self, prem: list[str], hyp: list[str], u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Rule score per row."""
        return np.array([rule_contradiction(a, b) for a, b in zip(prem, hyp, strict=True)], dtype=np.float32)


def head_path() -> Path:
    """Location of the shipped head weights (inside the ``precomem`` package, so it needs nothing else)."""
    return Path(__file__).resolve().parent / "models" / "nli_head.npz"


def cross_encoder_path() -> Path:
    """Where a cross-encoder is looked for: ``$PRECOMEM_NLI_MODEL``, else ``models/nli-cross-encoder`` under
    ``$DIMOBENCH_CACHE_DIR`` or the user cache (save one there with ``CrossEncoder.save``)."""
    override = os.environ.get("PRECOMEM_NLI_MODEL")
    if override:
        return Path(override)
    base = os.environ.get("DIMOBENCH_CACHE_DIR")
    if not base:
        import platformdirs

        base = platformdirs.user_cache_dir("dimobench")
    return Path(base) / "models" / CROSS_ENCODER_DIRNAME


def _softmax(logits: np.ndarray, temperature: float) -> np.ndarray:
    z = logits / temperature
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


class HeadVerifier:
    """MLP on ``[u, v, |u - v|, u * v]`` of MiniLM embeddings, trained on SNLI (scripts/train_nli_head.py)."""

    name = "minilm-head"

    def __init__(self, path: Path, temperature: float | None = None) -> None:
        """Load the float16 weights into float32 arrays."""
        with np.load(path, allow_pickle=False) as d:
            self.w1, self.b1 = d["w1"].astype(np.float32), d["b1"].astype(np.float32)
            self.w2, self.b2 = d["w2"].astype(np.float32), d["b2"].astype(np.float32)
            self.temperature = float(temperature or d["temperature"])
            self.test_accuracy = float(d["snli_test_accuracy"])
            self._c = list(d["labels"]).index("contradiction")

    def contradiction(self, prem: list[str], hyp: list[str], u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Temperature-scaled P(contradiction) from the head."""
        x = np.concatenate([u, v, np.abs(u - v), u * v], axis=1)
        logits = np.maximum(x @ self.w1 + self.b1, 0.0) @ self.w2 + self.b2
        return _softmax(logits, self.temperature)[:, self._c].astype(np.float32)


class CrossEncoderVerifier:
    """A sentence-transformers CrossEncoder fine-tuned on NLI, built by the user into the cache."""

    name = "cross-encoder"

    def __init__(self, path: Path, temperature: float | None = None) -> None:
        """Load the cross-encoder and find its contradiction label (defaults to our label order)."""
        from sentence_transformers import CrossEncoder

        self.model = CrossEncoder(str(path), device="cpu")
        id2label = getattr(self.model.model.config, "id2label", None) or {}
        names = [str(id2label.get(i, "")).lower() for i in range(len(id2label))]
        self._c = names.index("contradiction") if "contradiction" in names else LABELS.index("contradiction")
        self.temperature = temperature or 1.0

    def contradiction(self, prem: list[str], hyp: list[str], u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Temperature-scaled P(contradiction) from the cross-encoder."""
        if not prem:
            return np.zeros(0, dtype=np.float32)
        logits = np.asarray(self.model.predict(list(zip(prem, hyp, strict=True)), show_progress_bar=False))
        return _softmax(logits.reshape(len(prem), -1), self.temperature)[:, self._c].astype(np.float32)


_VERIFIERS: dict[tuple[str, str, float | None], Verifier] = {}


def make_verifier(config: PreCoMemConfig, enc: Encoder) -> Verifier:
    """First available verifier in preference order; the head needs MiniLM embeddings to match its
    training."""
    kind, temp = config.nli, config.nli_temperature
    key = (kind, enc.name, temp)
    if key in _VERIFIERS:
        return _VERIFIERS[key]
    verifier: Verifier = RuleVerifier()
    ce = cross_encoder_path()
    if kind in ("auto", "cross-encoder") and ce.is_dir() and enc.name != "hashing":
        verifier = CrossEncoderVerifier(ce, temp)
    elif kind in ("auto", "head") and enc.name == "minilm" and head_path().is_file():
        verifier = HeadVerifier(head_path(), temp)
    elif kind in ("cross-encoder", "head"):
        # An explicit choice that cannot be honoured is an error; only "auto" falls back silently.
        raise FileNotFoundError(f"nli={kind!r} requested but its model is missing (encoder {enc.name!r})")
    _VERIFIERS[key] = verifier
    return verifier


def gated_contradiction(
    verifier: Verifier,
    prem: list[str],
    hyp: list[str],
    u: np.ndarray,
    v: np.ndarray,
    enc: Encoder,
    ramp: float = 0.3,
) -> np.ndarray:
    """Contradiction per row: ``max(rule, model * relatedness ramp)``, 0 below the relatedness cosine.

    SNLI models call any two different scenes a contradiction ("hiking on Sundays" vs "swimming on Sunday"
    scores 0.9), which for a user's beliefs is usually a new fact, not a reversal. So the model's probability
    is scaled by how related the pair is, rising linearly from 0 at the gate to full weight ``ramp`` above it;
    the rule needs shared content words anyway and counts in full above the gate.
    """
    out = np.zeros(len(prem), dtype=np.float32)
    if not prem:
        return out
    cos = np.einsum("ij,ij->i", u, v)
    idx = np.flatnonzero(cos >= enc.related)
    if not len(idx):
        return out
    sub_p, sub_h = [prem[i] for i in idx], [hyp[i] for i in idx]
    rule = RuleVerifier().contradiction(sub_p, sub_h, u[idx], v[idx])
    if verifier.name != "rule":
        weight = np.clip((cos[idx] - enc.related) / ramp, 0.0, 1.0)
        rule = np.maximum(rule, verifier.contradiction(sub_p, sub_h, u[idx], v[idx]) * weight)
    out[idx] = rule
    return out
