"""Option values at and past their edges (zero, negative, unknown names, too many personas): one line, exit 2.

Every case runs the real command; none may print a traceback or a usage box, and none may write anything.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from dimobench.errors import ConfigError
from tests.helpers.cli import run_cli


def one_line(r: object) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)  # type: ignore[attr-defined]
    lines = r.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr  # type: ignore[attr-defined]
    return str(lines[0])


GENERATE = ["generate", "--turns", "60", "--personas", "1", "--no-verify", "--no-audit"]


@pytest.mark.parametrize("args,message", [
    ([*GENERATE, "--concurrency", "0"], "--concurrency must be at least 1 (got 0)"),
    ([*GENERATE, "--workers", "0"], "--workers must be at least 1 (got 0)"),
    ([*GENERATE, "--generator", "openai", "--concurrency", "-3"], "--concurrency must be at least 1 (got -3)"),
    ([*GENERATE, "--timeout", "0"], "--timeout must be more than 0 (got 0)"),
    ([*GENERATE, "--generator", "openai", "--batch", "--batch-poll", "-1"], "--batch-poll must be more than 0"),
    ([*GENERATE[:3], "--personas", "60", "--no-verify"], "--personas 60 is too many for the catalog"),
])
def test_generate_refuses_in_one_line_and_writes_nothing(args: list[str], message: str, tmp_path: Path) -> None:
    out = tmp_path / "s"
    line = one_line(run_cli(*args, "--out", str(out)))
    assert line.startswith("dimobench: error: ") and message in line
    assert not out.exists()


def test_the_persona_limit_is_the_most_that_generates(tmp_path: Path) -> None:
    from dimobench.generate.config import max_personas

    most = max_personas()
    line = one_line(run_cli(*GENERATE[:3], "--personas", str(most + 1), "--no-verify", "--out", str(tmp_path / "x")))
    assert line.endswith(f"so at most {most}")
    r = run_cli(*GENERATE[:3], "--personas", str(most), "--no-verify", "--no-audit", "--seed", "5", "--out",
                str(tmp_path / "s"))
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("extra,message", [
    (["--verifier", "openai", "--concurrency", "0"], "--concurrency must be at least 1 (got 0)"),
    (["--verifier", "openai", "--timeout", "-5"], "--timeout must be more than 0 (got -5)"),
    (["--repair", "--max-tries", "0"], "--max-tries must be at least 1 (got 0)"),
    (["--calibrate", "--per-defect", "-1"], "--per-defect must be at least 1 (got -1)"),
])
def test_verify_refuses_in_one_line(extra: list[str], message: str, offline_suite: Callable[[int], Path]) -> None:
    suite = offline_suite(60)
    before = sorted(p.name for p in suite.iterdir())
    assert message in one_line(run_cli("verify", str(suite), *extra))
    assert sorted(p.name for p in suite.iterdir()) == before


@pytest.mark.parametrize("extra,message", [
    (["--concurrency", "0"], "--concurrency must be at least 1 (got 0)"),
    (["--timeout", "0"], "--timeout must be more than 0 (got 0)"),
    (["--seed", "-1"], "--seed must be at least 0 (got -1)"),
    (["--embedding", "bogus"], "--embedding 'bogus': unknown embedding (choose auto, minilm, hashing)"),
])
def test_evaluate_refuses_in_one_line_and_writes_nothing(extra: list[str], message: str,
                                                         offline_suite: Callable[[int], Path], tmp_path: Path) -> None:
    out = tmp_path / "r"
    line = one_line(run_cli("evaluate", str(offline_suite(60)), "--system", "recency", "--no-plots", "--out",
                            str(out), *extra))
    assert message in line
    assert not out.exists()


@pytest.mark.parametrize("args,message", [
    (["compare", "a", "b", "--seed", "-1"], "--seed must be at least 0 (got -1)"),
    (["compare", "a", "b", "--bootstrap", "-1"], "--bootstrap must be at least 0 (got -1)"),
    (["review", "score", "sheet_a.csv", "sheet_b.csv", "--seed", "-2"], "--seed must be at least 0 (got -2)"),
])
def test_bootstrap_seeds_and_counts_refuse_in_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    assert message in one_line(run_cli(*args, cwd=tmp_path))


@pytest.mark.parametrize("command", ["generate", "verify", "evaluate"])
def test_timeout_is_in_the_help_of_every_command_that_calls_an_llm(command: str) -> None:
    r = run_cli(command, "--help")
    assert r.returncode == 0
    assert "--timeout" in r.stdout and "SECONDS" in r.stdout and "no limit" in r.stdout


@pytest.mark.parametrize("module", ["dimobench.embed", "dimobench.verify.embed"])
def test_an_unknown_embedding_name_is_refused_not_swapped_for_hashing(module: str) -> None:
    import importlib

    embed = importlib.import_module(module)
    with pytest.raises(ConfigError, match="'minlm'.*auto, minilm.*hashing"):
        embed.Embedder("minlm")
    assert embed.Embedder("hashing") is not None


def test_calibrating_a_suite_against_a_catalog_without_its_states_is_one_line(
        offline_suite: Callable[[int], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json
    import shutil

    from dimobench.resources import resource_dir

    suite = tmp_path / "s"
    shutil.copytree(offline_suite(60), suite)
    # what a suite made before suites recorded their catalog met when read against another catalog: a catalog
    # without one of its traits (here the packaged one, less the topic of the suite's first trait)
    catalog = tmp_path / "catalog"
    shutil.copytree(resource_dir("data"), catalog)
    first = json.loads((suite / "personas.jsonl").read_text(encoding="utf-8").splitlines()[0])["traits"][0]
    for topic in (catalog / "topics").glob("*.json"):
        if first["trait_id"] in {t["trait_id"] for t in json.loads(topic.read_text(encoding="utf-8"))["traits"]}:
            topic.unlink()
    monkeypatch.setenv("DIMOBENCH_CATALOG", str(catalog))
    r = run_cli("verify", str(suite), "--calibrate", "--per-defect", "2")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "personas.jsonl:1: traits: trait " in one_line(r) and "is not in the catalog" in one_line(r)
