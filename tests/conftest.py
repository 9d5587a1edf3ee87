"""Shared fixtures: isolate caches and home from the user's, and generate small suites once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runapi", action="store_true", help="run live-API tests (marked runapi; need a key)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="live API: pass --runapi")
    for item in items if not config.getoption("--runapi") else ():
        if "runapi" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _isolate(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("DIMOBENCH_CACHE_DIR", str(home / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "xdg-cache"))
    monkeypatch.delenv("DIMOBENCH_CATALOG", raising=False)


@pytest.fixture(scope="session")
def small_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 personas x 300 turns, 2 drifts each: every phase, type and confounder kind appears."""
    from dimobench.api import generate_suite
    from dimobench.generate.config import make_config

    out = tmp_path_factory.mktemp("suites") / "small"
    generate_suite(make_config(turns=300, drifts=2, personas=3, seed=11), out)
    return out


@pytest.fixture(scope="session")
def xl_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The DiMoBench-XL shape: 5 x 1,050 turns, 3 drifts, 2,100 QA (about 2 s offline)."""
    from dimobench.api import generate_suite
    from dimobench.generate.config import make_config

    out = tmp_path_factory.mktemp("suites") / "xl"
    generate_suite(make_config(turns=1050, drifts=3, seed=7), out)
    return out
