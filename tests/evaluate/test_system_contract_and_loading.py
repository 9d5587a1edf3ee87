"""Adapter contract: turn views, recall normalisation, loading module:Class and clear failures."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from dimobench.evaluate.protocol import SystemFailure, TurnView, normalise_items
from dimobench.evaluate.systems import BUILTINS, make_system


def test_turn_view_reads_both_ways() -> None:
    t = TurnView({"turn": 3, "user": "hi"})
    assert t["turn"] == 3 and t.user == "hi" and dict(t) == {"turn": 3, "user": "hi"}
    with pytest.raises(AttributeError):
        _ = t.annotation


def test_normalise_items_accepts_dicts_objects_and_strings() -> None:
    class Item:
        text, score, source_turns = "b", 0.5, [4]

    items = normalise_items([{"text": "a", "score": 2}, Item(), "c"], k=2)
    assert [(i.text, i.score, i.source_turns) for i in items] == [("a", 2.0, []), ("b", 0.5, [4])]
    with pytest.raises(ValueError):
        normalise_items([{"score": 1}], k=5)


def test_builtins_are_listed() -> None:
    assert {"precomem", "precomem:a1", "none", "full", "recency", "window", "bm25", "oracle"} <= set(BUILTINS)


@pytest.mark.parametrize("spec, needle", [
    ("no_such_module_xyz:Thing", "cannot import module"),
    ("json:NoSuchClass", "has no attribute"),
    ("nonsense", "unknown system"),
])
def test_bad_system_paths(spec: str, needle: str) -> None:
    with pytest.raises(SystemFailure, match=needle):
        make_system(spec)


def test_missing_method(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "halfmem.py").write_text(textwrap.dedent("""
        class Half:
            def reset(self, persona_id): pass
            def observe(self, turn): pass
    """))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemFailure, match="lacks required method.*recall"):
        make_system("halfmem:Half")
