"""A small generated suite shared by the verify tests (the embedding model loads once per session)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.suites import generate


@pytest.fixture(scope="session")
def verify_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 personas x 300 turns, 2 drifts each: every qa_type and confounder kind appears."""
    return generate(tmp_path_factory.mktemp("verify") / "base", turns=300, drifts=2, personas=2, seed=3)


@pytest.fixture
def suite_copy(verify_base: Path, tmp_path: Path) -> Path:
    """A fresh copy of the base suite that a test may change."""
    dst = tmp_path / "suite"
    shutil.copytree(verify_base, dst)
    return dst
