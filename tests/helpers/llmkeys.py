"""Fake API keys the LLM tests set (the ``fast_retry_waits`` fixture), and the check that none of them was
written anywhere."""

from __future__ import annotations

from pathlib import Path

OPENAI_KEY = "sk-test-NEVER-WRITE-7f3a9c1e5b"
GEMINI_KEY = "gm-test-NEVER-WRITE-2d8e4f6a0c"


def assert_no_key_anywhere(*roots: Path, texts: tuple[str, ...] = ()) -> None:
    """No file below ``roots`` and none of ``texts`` (outputs, messages) contains either key."""
    for root in roots:
        for f in root.rglob("*"):
            if f.is_file():
                data = f.read_bytes()
                assert OPENAI_KEY.encode() not in data and GEMINI_KEY.encode() not in data, f
    for t in texts:
        assert OPENAI_KEY not in t and GEMINI_KEY not in t
