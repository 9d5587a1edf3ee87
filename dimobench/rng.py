"""Seeded randomness: one root seed, children derived by name, never global state."""

from __future__ import annotations

import hashlib
import random


def derive_seed(seed: int, *keys: object) -> int:
    """A 64-bit seed from a root seed and any keys (stage name, persona id, ...), stable across runs."""
    text = "\x1f".join([str(seed), *map(str, keys)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def derive_rng(seed: int, *keys: object) -> random.Random:
    """A ``random.Random`` of its own for ``keys``: adding a stage or persona never shifts another's draws."""
    return random.Random(derive_seed(seed, *keys))
