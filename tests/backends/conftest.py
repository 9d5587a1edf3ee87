"""Backend tests: every one runs with zero retry waits and fake keys that must never be written anywhere
(``fast_retry_waits``, defined in ``tests/conftest.py`` with the fake server the LLM tests of other folders share)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _backend_llm_env(fast_retry_waits: None) -> None:
    """Turn ``fast_retry_waits`` on for every backend test (before any module's own autouse fixtures)."""
