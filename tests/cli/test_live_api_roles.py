"""Live-API checks of every LLM role on a tiny suite: run only with ``--runapi`` and a key in the environment.

They spend a few cents: one short persona, a handful of questions. Nothing here runs in CI.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dimobench.cli.app import app

pytestmark = pytest.mark.usefixtures("fast_retry_waits")

ROLES = [("openai/gpt-4o-mini", "OPENAI_API_KEY"), ("gemini/gemini-2.5-flash", "GEMINI_API_KEY")]


def _need_key(var: str) -> None:
    if not (os.environ.get(var) or (var == "GEMINI_API_KEY" and os.environ.get("GOOGLE_API_KEY"))):
        pytest.skip(f"{var} is not set")


def _run(*args: str) -> None:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output


@pytest.mark.runapi
@pytest.mark.parametrize("spec,var", ROLES)
def test_live_generate_verify_evaluate(spec: str, var: str, tmp_path: Path) -> None:
    _need_key(var)
    suite = tmp_path / "s"
    _run("generate", "--personas", "1", "--turns", "40", "--drifts", "1", "--qa", "4", "--generator", spec,
         "--no-verify", "--out", str(suite), "--cache-dir", str(tmp_path / "cache"))
    _run("validate", str(suite))
    _run("verify", str(suite), "--verifier", spec, "--cache-dir", str(tmp_path / "cache"))
    out = tmp_path / "r"
    _run("evaluate", str(suite), "--system", "full", "--answerer", spec, "--free-text", "--judge", spec,
         "--cache-dir", str(tmp_path / "cache"), "--out", str(out), "--no-plots")
    report = json.loads((out / "report.json").read_text())
    assert 0.0 <= report["systems"]["full"]["overall"] <= 1.0
    key = os.environ.get(var) or os.environ.get("GOOGLE_API_KEY", "")
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert key not in path.read_text(errors="ignore")
