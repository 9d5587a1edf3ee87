"""Each adapter against its real library, offline: contract, persona isolation, no outside host, a harness run.

Skipped where the extras are not installed (CI's main install); run them in a venv with ``.[adapters]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dimobench.evaluate.protocol import normalise_items
from dimobench.evaluate.systems import make_system
from dimobench.evaluate.systems.adapters import ADAPTERS
from tests.helpers.netguard import outside_host_guard, turn

ALICE = ["I love hiking in the mountains on weekends.", "My dog is called Rex and he is a beagle.",
         "I switched to a vegan diet last month.", "I work night shifts as a nurse."]
BOB = ["I play the cello in a string quartet.", "My favourite food is spicy ramen."]


def _needs(name: str) -> None:
    for module in ADAPTERS[name][2]:
        pytest.importorskip(module)


@pytest.fixture(scope="module", params=sorted(ADAPTERS))
def built(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any, list[str]]]:
    """One instance per adapter, built (and its library imported) under the network guard."""
    name = request.param
    _needs(name)
    with outside_host_guard() as seen:
        system = make_system(name)
        yield name, system, seen


def test_recall_finds_the_relevant_turn(built: tuple[str, Any, list[str]]) -> None:
    name, system, seen = built
    with outside_host_guard() as seen_now:
        system.reset("alice")
        assert system.recall("what pet do I have", 5) == []
        for n, text in enumerate(ALICE, 1):
            system.observe(turn(n, text))
        items = normalise_items(system.recall("What is the name of my pet?", 3), 3)
    assert 1 <= len(items) <= 3
    assert items[0].text == ALICE[1] and items[0].source_turns == [2]
    assert [it.score for it in items] == sorted((it.score for it in items), reverse=True)
    assert {it.text for it in items} <= set(ALICE)
    stats = system.stats()
    assert stats["raw_items"] == len(ALICE) and isinstance(stats["retrieval"], str)
    assert seen == [] and seen_now == [], f"{name} looked up outside hosts: {seen + seen_now}"


def test_reset_isolates_personas(built: tuple[str, Any, list[str]]) -> None:
    name, system, seen = built
    with outside_host_guard() as seen_now:
        system.reset("alice")
        for n, text in enumerate(ALICE, 1):
            system.observe(turn(n, text))
        system.reset("bob")
        assert system.recall("What is the name of my pet?", 10) == []  # nothing of Alice's
        for n, text in enumerate(BOB, 1):
            system.observe(turn(n, text))
        texts = {it.text for it in normalise_items(system.recall("What is the name of my pet?", 10), 10)}
        system.reset("alice")  # the same persona id again starts empty too
        assert system.recall("ramen", 10) == []
    assert texts == set(BOB)
    assert seen == [] and seen_now == []


def test_blank_turns_are_not_stored(built: tuple[str, Any, list[str]]) -> None:
    _, system, _ = built
    system.reset("carol")
    system.observe(turn(1, "   "))
    assert system.recall("anything", 5) == [] and system.stats()["raw_items"] == 0


@pytest.mark.slow
def test_cli_runs_all_adapters_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ADAPTERS:
        _needs(name)
    from dimobench.api import generate_suite
    from dimobench.cli.app import app
    from dimobench.generate.config import make_config

    suite = tmp_path / "s"
    generate_suite(make_config(turns=60, personas=2, qa=8, seed=3), suite)
    out = tmp_path / "r"
    args = ["evaluate", str(suite), "--out", str(out), "--bootstrap", "50", "--no-plots", "--system", "none"]
    for name in ADAPTERS:
        args += ["--system", name]
    with outside_host_guard() as seen:
        res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert seen == []
    systems = json.loads((out / "report.json").read_text())["systems"]
    assert set(systems) == {"none", *ADAPTERS}
    for name in ADAPTERS:
        assert 0 <= systems[name]["overall"] <= 1
        rows = [json.loads(x) for x in (out / f"answers-{name}.jsonl").read_text().splitlines()]
        assert rows and all(r["recalled"] for r in rows)  # every question got something recalled
