"""Review fixtures: one --preset dimobench suite (1,000 QA) per session and a 10-item sample of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.suites import generate


@pytest.fixture(scope="session")
def dimo_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The paper shape: 5 personas x 350 turns, 1 drift, 1,000 QA, seed 0 (about 1 s offline)."""
    return generate(tmp_path_factory.mktemp("review") / "dimo", "dimobench", seed=0)


@pytest.fixture(scope="session")
def small_sample(dimo_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 10-item sample (frac 0.01) with two blank sheets, ``sheet_a.csv`` and ``sheet_b.csv``."""
    from dimobench.review import sample_suite

    out = tmp_path_factory.mktemp("review") / "sample10"
    sample, _ = sample_suite(dimo_suite, out, frac=0.01, calibration=3, seed=5)
    assert len(sample.items) == 10
    return out
