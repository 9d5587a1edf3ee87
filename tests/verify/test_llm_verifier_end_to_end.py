"""``dimobench verify --verifier openai|gemini`` and ``generate --verifier``, end to end against the local fake
server (real processes, real HTTP on 127.0.0.1), plus the reply-to-verdict mapping with the scripted backend."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dimobench import prompts
from dimobench.backends.scripted import ScriptedBackend
from dimobench.verify import llm as verify_llm
from dimobench.verify import llm_turns
from dimobench.verify.llm import verify_suite_llm
from tests.helpers.fakeserver import FakeLLMServer
from tests.helpers.interrupt import kill_halfway
from tests.helpers.llmkeys import OPENAI_KEY, assert_no_key_anywhere

pytestmark = pytest.mark.usefixtures("fast_retry_waits")

SMALL = ["--personas", "1", "--turns", "120", "--drifts", "1", "--no-verify"]
SPECS = {"openai": "openai/test-model", "gemini": "gemini/test-model"}
STATE_FILES = ("faithfulness.jsonl", "verify-failures.jsonl")
"""Deterministic run-state files compared along with the suite (the run log has wall-clock times)."""


def run(cmd: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "COLUMNS": "200", **env})


def dimobench(*args: str) -> list[str]:
    return [sys.executable, "-m", "dimobench", *args]


def verify_args(provider: str, srv: FakeLLMServer, suite: Path, cache: Path, *extra: str) -> list[str]:
    base = srv.url + ("/v1" if provider == "openai" else "")
    return dimobench("verify", str(suite), "--verifier", SPECS[provider], "--base-url", base,
                     "--cache-dir", str(cache), *extra)


def outputs(suite: Path) -> dict[str, bytes]:
    """The suite's files and the deterministic run-state files (not the run log, not the journal)."""
    files = {f.name: f.read_bytes() for f in sorted(suite.iterdir()) if f.is_file()}
    for name in STATE_FILES:
        if (suite / ".dimobench" / name).exists():
            files[f".dimobench/{name}"] = (suite / ".dimobench" / name).read_bytes()
    return files


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


@pytest.fixture(scope="module")
def offline_suite(offline_suite: Callable[[int], Path]) -> Path:
    """1 persona x 120 turns, 1 drift, offline (the session's shared one: tests copy it before changing it)."""
    return offline_suite(120)


@pytest.fixture(scope="module")
def llm_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite whose text the (fake) openai generator wrote."""
    base = tmp_path_factory.mktemp("verify-llm")
    with FakeLLMServer() as srv:
        r = run(dimobench("generate", "--generator", "openai/gpt-test", "--base-url", srv.url + "/v1", "--out",
                          str(base / "llm"), "--cache-dir", str(base / "gen-cache"), *SMALL),
                OPENAI_API_KEY=OPENAI_KEY, DIMOBENCH_RETRY_WAIT_SCALE="0")
    assert r.returncode == 0, r.stderr
    return base / "llm"


def fresh(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_verify_writes_the_offline_format_and_a_warm_rerun_makes_no_call(provider: str, offline_suite: Path,
                                                                         server: FakeLLMServer,
                                                                         tmp_path: Path) -> None:
    a, b = fresh(offline_suite, tmp_path / "a"), fresh(offline_suite, tmp_path / "b")
    cache = tmp_path / "cache"
    r = run(verify_args(provider, server, a, cache))
    assert r.returncode == 0, r.stderr
    qa = lines(a / "qa.jsonl")
    assert server.count == len(qa), "one call per item"
    verdicts = lines(a / "verdicts.jsonl")
    assert [v["qa_id"] for v in verdicts] == [q["qa_id"] for q in qa]
    for v in verdicts:
        assert v["verdict"] in ("ACCEPT", "REVISE", "REJECT")
        assert list(v["criteria"]) == ["supported", "temporally_valid", "implicit", "unambiguous",
                                       "type_faithful", "confounder_robust"]
        assert all(c["verdict"] in ("ACCEPT", "REJECT", "UNSCORED") and c["explanation"]
                   for c in v["criteria"].values())
        assert v["verifier"]["provider"] == provider and v["verifier"]["model"] == "test-model"
        assert len(v["verifier"]["prompt_hash"]) == 16
    manifest = json.loads((a / "manifest.json").read_text())
    assert manifest["config"]["backends"]["verifier"] == SPECS[provider]
    assert set(manifest["config"]["verifier_prompts"]) == {"verifier/system", "verifier/item"}
    assert sum(manifest["counts"]["verdicts"].values()) == len(qa)
    assert f"verifier {SPECS[provider]}" in r.stdout and f"{len(qa)} call(s), 0 from cache" in r.stderr
    assert run(dimobench("validate", str(a))).returncode == 0
    body = server.requests[0]["body"]
    schema = (body["response_format"]["json_schema"]["schema"] if provider == "openai"
              else body["generationConfig"]["responseJsonSchema"])
    assert schema["properties"]["supported"]["properties"]["verdict"]["enum"] == ["ACCEPT", "REJECT", "CANNOT_TELL"]
    prompts = [json.dumps(q["body"], ensure_ascii=False) for q in server.requests]
    assert all("The gold must show" in p for p in prompts)
    assert any(json.dumps(qa[0]["question"], ensure_ascii=False)[1:-1] in p for p in prompts)

    calls = server.count
    r2 = run(verify_args(provider, server, b, cache))
    assert r2.returncode == 0, r2.stderr
    assert server.count == calls, "a warm cache makes zero calls"
    assert outputs(a) == outputs(b)
    r3 = run(verify_args(provider, server, a, cache))  # verifying a verified suite again changes nothing
    assert r3.returncode == 0 and server.count == calls
    assert outputs(a) == outputs(b)
    assert not (a / ".dimobench" / "verify-journal").exists(), "a clean finish leaves no journal"
    assert_no_key_anywhere(tmp_path, texts=(r.stdout, r.stderr, r2.stdout, r2.stderr))


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_planted_faults_are_retried_transparently(provider: str, offline_suite: Path, tmp_path: Path) -> None:
    faults = {2: "429", 4: "500", 6: "truncated", 8: "missing", 10: "garbage"}
    with FakeLLMServer(faults=faults, retry_after=1) as srv:
        suite = fresh(offline_suite, tmp_path / "s")
        r = run(verify_args(provider, srv, suite, tmp_path / "cache", "--concurrency", "1"))
        assert r.returncode == 0, r.stderr
        assert srv.count == len(lines(suite / "qa.jsonl")) + len(faults)
    log = lines(suite / ".dimobench" / "run.log.jsonl")
    assert log[-1]["event"] == "verify" and log[-1]["attempts"] == srv.count and log[-1]["failures"] == 0
    with FakeLLMServer() as srv:
        ref = fresh(offline_suite, tmp_path / "ref")
        assert run(verify_args(provider, srv, ref, tmp_path / "cache-ref")).returncode == 0
    assert outputs(suite) == outputs(ref)


def test_a_call_failing_after_its_retries_is_recorded_and_resume_retries_only_it(offline_suite: Path,
                                                                                tmp_path: Path) -> None:
    with FakeLLMServer() as srv:
        ref = fresh(offline_suite, tmp_path / "ref")
        assert run(verify_args("openai", srv, ref, tmp_path / "cache-ref")).returncode == 0
    with FakeLLMServer(faults=dict.fromkeys(range(1, 6), "500")) as srv:  # the first item fails 5 times
        suite = fresh(offline_suite, tmp_path / "s")
        cmd = verify_args("openai", srv, suite, tmp_path / "cache", "--concurrency", "1")
        r = run(cmd)
        assert r.returncode == 1, r.stderr
        assert "1 item(s) could not be verified" in r.stderr and "p01-q0001" in r.stderr
        assert "Traceback" not in r.stderr
        first = lines(suite / "verdicts.jsonl")[0]
        assert first["verdict"] == "REVISE"
        assert all(c["verdict"] == "UNSCORED" and "server error 500" in c["explanation"]
                   for c in first["criteria"].values())
        fails = lines(suite / ".dimobench" / "verify-failures.jsonl")
        assert [f["item"] for f in fails] == ["p01-q0001"]
        assert (suite / ".dimobench" / "verify-journal").is_dir()
        before = srv.count
        r = run([*cmd, "--resume"])
        assert r.returncode == 0, r.stderr
        assert srv.count - before == 1, "only the failed item is asked again"
    assert lines(suite / ".dimobench" / "verify-failures.jsonl") == []
    assert outputs(suite) == outputs(ref)
    assert_no_key_anywhere(tmp_path)


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_killed_run_resumes_to_the_same_bytes_repeating_only_calls_in_flight(provider: str, offline_suite: Path,
                                                                             tmp_path: Path) -> None:
    concurrency = 2
    with FakeLLMServer() as srv:
        ref = fresh(offline_suite, tmp_path / "ref")
        assert run(verify_args(provider, srv, ref, tmp_path / "cache-ref")).returncode == 0
        total = srv.count
    with FakeLLMServer(delay=0.1) as srv:
        suite = fresh(offline_suite, tmp_path / "s")
        cmd = verify_args(provider, srv, suite, tmp_path / "cache", "--concurrency", str(concurrency))
        before = kill_halfway(cmd, srv, total)
        journal = suite / ".dimobench" / "verify-journal" / "llm-replies.jsonl"
        done = sum(1 for ln in journal.read_bytes().splitlines() if ln.strip())
        assert 0 < done < total and before - done <= concurrency
        srv.delay = 0
        # a fresh shared cache: the suite's own journal is what --resume keeps
        resume = [*cmd[:cmd.index("--cache-dir") + 1], str(tmp_path / "other-cache"), "--resume"]
        r = run(resume)
        assert r.returncode == 0, r.stderr
        assert srv.count - before == total - done  # only what had not finished (in flight included)
    assert outputs(suite) == outputs(ref)
    assert_no_key_anywhere(tmp_path, texts=(r.stderr,))


def _turn_judge(bad_texts: set[str], always_bad: set[int]) -> Any:
    """A fake verifier reply hook: turn checks fail for the given user texts and, every time, turn numbers."""

    def reply(model: str, prompt: str, schema: dict[str, Any]) -> Any:
        if "follows_spec" not in schema.get("properties", {}):
            return None
        turn = int(re.search(r"Check turn (\d+) of", prompt).group(1))  # type: ignore[union-attr]
        user = re.search(r'^user: "(.*)"$', prompt, re.MULTILINE).group(1)  # type: ignore[union-attr]
        if turn in always_bad or user in bad_texts:
            return {"explanation": "It does not show the planned state.", "follows_spec": False,
                    "no_state_words": True, "right_subject": True}
        return None

    return reply


def test_llm_written_turns_are_checked_and_failing_ones_rerendered(llm_suite: Path, tmp_path: Path) -> None:
    turns = lines(llm_suite / "dialogues.jsonl")
    cues = [t for t in turns if t["annotation"]["kind"] == "cue"]
    fixable, stubborn = {cues[0]["turn"], cues[2]["turn"]}, {cues[1]["turn"]}
    judge = _turn_judge({t["user"] for t in cues if t["turn"] in fixable}, stubborn)
    suite = fresh(llm_suite, tmp_path / "s")
    with FakeLLMServer(reply=judge) as srv:  # gemini verifies; the suite's openai generator re-renders
        r = run(verify_args("gemini", srv, suite, tmp_path / "cache"))
        assert r.returncode == 0, r.stderr
        rerenders = [q for q in srv.requests if q["path"].endswith("/chat/completions")]
        assert rerenders and {q["body"]["model"] for q in rerenders} == {"gpt-test"}
        assert "The earlier text did not follow it" in rerenders[0]["body"]["messages"][1]["content"]
        calls = srv.count
        again = run(verify_args("gemini", srv, suite, tmp_path / "cache"))
        assert again.returncode == 0 and srv.count == calls, "verifying the verified suite makes no call"
    records = {r["turn"]: r for r in lines(suite / ".dimobench" / "faithfulness.jsonl")}
    checked = [t for t in turns if t["annotation"]["kind"] in ("cue", "chatter", "entity", "decoy")]
    assert sorted(records) == [t["turn"] for t in checked]
    after = {t["turn"]: t for t in lines(suite / "dialogues.jsonl")}
    for t in turns:
        rec = records.get(t["turn"])
        if t["turn"] in fixable:
            assert rec["outcome"] == "rerendered" and rec["attempts"] == 1  # type: ignore[index]
            assert rec["replaced"]["user"] == t["user"] != after[t["turn"]]["user"]  # type: ignore[index]
            assert rec["rendered"]["user"] == after[t["turn"]]["user"]  # type: ignore[index]
        elif t["turn"] in stubborn:
            assert rec["outcome"] == "unfixed" and rec["attempts"] == 2  # type: ignore[index]
            assert after[t["turn"]] == t, "a turn no re-render fixed keeps its text"
        else:
            assert after[t["turn"]] == t
            assert rec is None or rec["outcome"] == "faithful"
    manifest = json.loads((suite / "manifest.json").read_text())
    assert manifest["counts"]["faithfulness"] == {"checked": len(checked), "faithful": len(checked) - 3,
                                                  "rerendered": 2, "unfixed": 1, "unchecked": 0}
    assert "verifier/turn" in manifest["config"]["verifier_prompts"]
    assert run(dimobench("validate", str(suite))).returncode == 0
    assert "2 re-rendered, 1 kept unfixed" in r.stderr
    assert_no_key_anywhere(tmp_path, texts=(r.stdout, r.stderr))


def test_rerendering_needs_the_generator_key_unless_no_rerender(llm_suite: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    suite = fresh(llm_suite, tmp_path / "s")
    before = outputs(suite)
    with FakeLLMServer(reply=_turn_judge(set(), {1})) as srv:
        r = run(verify_args("gemini", srv, suite, tmp_path / "cache"))
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
        assert "OPENAI_API_KEY" in r.stderr and "--no-rerender" in r.stderr and srv.count == 0
        assert outputs(suite) == before
        r = run(verify_args("gemini", srv, suite, tmp_path / "cache", "--no-rerender"))
        assert r.returncode == 0, r.stderr
        assert not any(q["path"].endswith("/chat/completions") for q in srv.requests)
    assert (suite / "dialogues.jsonl").read_bytes() == before["dialogues.jsonl"]
    first = lines(suite / ".dimobench" / "faithfulness.jsonl")[0]
    assert first["turn"] == 1 and first["outcome"] == "unfixed" and first["attempts"] == 0


@pytest.mark.parametrize("verifier,var", [("openai", "OPENAI_API_KEY"), ("gemini/gemini-2.5-flash", "GEMINI_API_KEY")])
def test_missing_key_is_one_line_exit_2_and_nothing_written(verifier: str, var: str, offline_suite: Path,
                                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(var)
    suite = fresh(offline_suite, tmp_path / "s")
    before = outputs(suite)
    r = run(dimobench("verify", str(suite), "--verifier", verifier))
    assert r.returncode == 2 and var in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert outputs(suite) == before and not (suite / "verdicts.jsonl").exists()
    out = tmp_path / "g"
    r = run(dimobench("generate", "--verifier", verifier, "--out", str(out), *SMALL[:-1]))
    assert r.returncode == 2 and var in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_generate_with_an_llm_verifier_defaults_to_gpt_4o(server: FakeLLMServer, tmp_path: Path) -> None:
    out = tmp_path / "s"
    r = run(dimobench("generate", "--verifier", "openai", "--base-url", server.url + "/v1", "--out", str(out),
                      "--cache-dir", str(tmp_path / "cache"), *SMALL[:-1]))
    assert r.returncode == 0, r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["backends"] == {"generator": "offline", "verifier": "openai/gpt-4o"}
    assert sum(manifest["counts"]["verdicts"].values()) == manifest["counts"]["qa"] == server.count
    assert {q["body"]["model"] for q in server.requests} == {"gpt-4o"}
    assert "stage 6 verification (openai/gpt-4o)" in r.stderr and "LLM verifier openai/gpt-4o" in r.stderr
    assert lines(out / "verdicts.jsonl")[0]["verifier"]["model"] == "gpt-4o"
    assert_no_key_anywhere(tmp_path, texts=(r.stdout, r.stderr))


def _judgement(verdicts: dict[str, tuple[str, bool]]) -> dict[str, Any]:
    return {name: {"explanation": f"{name} because", "verdict": v, "fixable": fix}
            for name, (v, fix) in verdicts.items()}


@pytest.mark.parametrize(("reply", "expected"), [
    ({"supported": ("ACCEPT", False), "implicit": ("ACCEPT", True)}, ("ACCEPT", ["ACCEPT", "ACCEPT"])),
    ({"supported": ("ACCEPT", False), "implicit": ("REJECT", True)}, ("REVISE", ["ACCEPT", "REJECT"])),
    ({"supported": ("REJECT", False), "implicit": ("REJECT", True)}, ("REJECT", ["REJECT", "REJECT"])),
    ({"supported": ("CANNOT_TELL", False), "implicit": ("ACCEPT", False)}, ("REVISE", ["UNSCORED", "ACCEPT"])),
])
def test_replies_map_to_verdicts_like_the_offline_verifier(reply: dict[str, tuple[str, bool]],
                                                           expected: tuple[str, list[str]],
                                                           offline_suite: Path) -> None:
    llm = ScriptedBackend(lambda request: _judgement(reply))
    result = verify_suite_llm(offline_suite, "openai/x", only=["implicit", "supported"], write=False, llm=llm)
    schema = llm.history[0].response_model.model_json_schema()
    assert list(schema["properties"]) == ["supported", "implicit"], "--only narrows the reply schema"
    first = result.verdicts[0]
    assert first.verdict == expected[0] and [c.verdict for c in first.criteria.values()] == expected[1]
    rejected = [c for c in first.criteria.values() if c.verdict == "REJECT"]
    assert all(c.fixable == (c.explanation == "implicit because") for c in rejected)  # type: ignore[attr-defined]
    assert not result.failures and len(llm.history) == len(result.verdicts)


@pytest.mark.parametrize("bad", ["", "{not json", '{"supported": {"verdict": "ACCEPT"}}', "null",
                                 '{"supported": {"explanation": "x", "verdict": "MAYBE", "fixable": false}}'])
def test_unusable_replies_leave_the_item_unscored_never_passed(bad: str, offline_suite: Path) -> None:
    llm = ScriptedBackend(lambda request: bad if request.item == "p01-q0001" else
                          _judgement({"supported": ("ACCEPT", False)}))
    result = verify_suite_llm(offline_suite, "openai/x", only=["supported"], write=False, llm=llm)
    first = result.verdicts[0]
    assert first.verdict == "REVISE" and first.criteria["supported"].verdict == "UNSCORED"
    assert "verifier call failed" in first.criteria["supported"].explanation
    assert [f["item"] for f in result.failures] == ["p01-q0001"] and result.run["unverified"] == 1
    assert all(v.verdict == "ACCEPT" for v in result.verdicts[1:])


@pytest.mark.parametrize("name", sorted({*verify_llm.PROMPTS, *llm_turns.PROMPTS}))
def test_every_verifier_prompt_declares_what_it_uses(name: str) -> None:
    p = prompts.load(name)
    assert p.version and p.response_model
    assert prompts.undeclared(name) == set()
