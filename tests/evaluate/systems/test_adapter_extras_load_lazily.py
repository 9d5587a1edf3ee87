"""Adapters are lazy: nothing loads until chosen, and a missing library is one line naming the extra (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dimobench.cli.app import app
from dimobench.evaluate.protocol import SystemFailure
from dimobench.evaluate.systems import BUILTINS, make_system
from dimobench.evaluate.systems.adapters import ADAPTERS

LIBS = ("mem0", "faiss", "langmem", "langgraph", "langchain_core", "agentic_memory", "chromadb", "litellm")


def test_adapters_are_builtins() -> None:
    assert {"mem0-raw", "langmem-store", "amem-raw"} <= set(BUILTINS) and set(ADAPTERS) <= set(BUILTINS)


def test_no_library_loads_unless_chosen() -> None:
    code = ("import sys; from dimobench.evaluate.systems import make_system; make_system('full'); "
            f"print([m for m in {LIBS!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_missing_library_names_the_extra(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    extra, _, modules = ADAPTERS[name]
    monkeypatch.setitem(sys.modules, modules[0], None)  # find_spec() reports it missing, installed or not
    with pytest.raises(SystemFailure) as err:
        make_system(name)
    msg = str(err.value)
    assert "\n" not in msg and f"pip install 'dimobench[{extra}]'" in msg and name in msg


def test_cli_exits_2_with_one_line(small_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agentic_memory", None)
    res = CliRunner().invoke(app, ["evaluate", str(small_suite), "--system", "full", "--system", "amem-raw",
                                   "--out", str(tmp_path / "r"), "--embedding", "hashing", "--no-plots"])
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert lines[-1] == ("dimobench: error: system 'amem-raw' needs the 'amem' extra: "
                         "pip install 'dimobench[amem]' (missing module 'agentic_memory')")
    assert "Traceback" not in res.output and not (tmp_path / "r" / "report.json").exists()


def test_really_missing_in_this_install() -> None:
    """Where the extras are not installed (CI's main install), the real import path fails the same way."""
    import importlib.util

    missing = [n for n, (_, _, mods) in ADAPTERS.items() if importlib.util.find_spec(mods[0]) is None]
    if not missing:
        pytest.skip("every adapter library is installed here")
    for name in missing:
        with pytest.raises(SystemFailure, match=r"pip install 'dimobench\["):
            make_system(name)
