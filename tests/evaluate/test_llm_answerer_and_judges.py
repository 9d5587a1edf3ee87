"""``dimobench evaluate`` with an LLM answerer and LLM judges, end to end against the local fake server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from dimobench.evaluate import scoring
from dimobench.evaluate.judges import majority, verdict_model
from dimobench.evaluate.llm_answerer import choice_model
from tests.helpers.fakeserver import FakeLLMServer
from tests.helpers.interrupt import kill_halfway
from tests.helpers.llmkeys import assert_no_key_anywhere

pytestmark = pytest.mark.usefixtures("fast_retry_waits")

SPEC = {"openai": "openai/test-answerer", "gemini": "gemini/test-answerer"}


@pytest.fixture(scope="module")
def suite(offline_suite: Callable[[int], Path]) -> Path:
    """1 persona x 120 turns, 1 drift, offline (48 questions)."""
    return offline_suite(120)


def n_questions(suite: Path) -> int:
    return len((suite / "qa.jsonl").read_text().splitlines())


def evaluate(suite: Path, srv: FakeLLMServer, out: Path, cache: Path, *extra: str, provider: str = "openai",
             system: str = "full") -> list[str]:
    base = srv.url + ("/v1" if provider == "openai" else "")
    return [sys.executable, "-m", "dimobench", "evaluate", str(suite), "--system", system, "--embedding", "hashing",
            "--no-plots", "--bootstrap", "50", "--base-url", base, "--cache-dir", str(cache), "--out", str(out),
            *extra]


def run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})


def rows(out: Path, system: str = "full") -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in (out / f"answers-{system}.jsonl").read_text().splitlines()]


def _drop_latency(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _drop_latency(v) for k, v in node.items() if k != "latency_ms"}
    if isinstance(node, list):
        return [_drop_latency(v) for v in node]
    return node


def deterministic(out: Path) -> dict[str, Any]:
    """answers-*.jsonl bytes, and report.json without its wall-clock latency figures (report.md has them too)."""
    files: dict[str, Any] = {f.name: f.read_bytes() for f in sorted(out.glob("answers-*.jsonl"))}
    files["report.json"] = _drop_latency(json.loads((out / "report.json").read_text()))
    return files


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_choice_answerer_end_to_end_and_warm_rerun_makes_no_call(provider: str, suite: Path, server: FakeLLMServer,
                                                                 tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    r = run(evaluate(suite, server, tmp_path / "a", cache, "--answerer", SPEC[provider], provider=provider))
    assert r.returncode == 0, r.stderr
    n = n_questions(suite)
    assert server.count == n, "one call per question"
    assert f"LLM answerer {SPEC[provider]}: {n} call(s), 0 from cache" in r.stderr
    answers = rows(tmp_path / "a")
    assert len(answers) == n and all(a["mode"] == "llm_choice" and a["failed"] is False for a in answers)
    assert all(0 <= a["chosen"] < len(a["options"]) and a["correct"] == (a["chosen"] == a["answer_index"])
               for a in answers)
    assert len({a["chosen"] for a in answers}) > 1
    # the request carries the question, the options and the recalled items; the reply schema is an enum
    bodies = [req["body"] for req in server.requests]
    if provider == "openai":
        prompts = [b["messages"][0]["content"] for b in bodies]
        schema = bodies[-1]["response_format"]["json_schema"]["schema"]
        assert all(b["temperature"] == 0 and b["seed"] == 0 for b in bodies)
    else:
        prompts = [b["contents"][0]["parts"][0]["text"] for b in bodies]
        schema = bodies[-1]["generationConfig"]["responseJsonSchema"]
    assert schema["properties"]["answer"]["enum"] == ["A", "B", "C", "D"]
    last = answers[-1]
    mine = [p for p in prompts if last["question"] in p and "D. " + last["options"][3] in p]
    assert len(mine) == 1 and " ".join(last["recalled"][0]["text"].split()) in mine[0]
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    desc = report["config"]["answerer"]
    assert desc["spec"] == SPEC[provider] and desc["mode"] == "choice" and len(desc["prompt_hash"]) == 64
    assert "base_url" not in json.dumps(report["config"]) and "judges" not in report["config"]
    assert report["systems"]["full"]["failed"] == 0
    assert report["systems"]["full"]["overall"] == round(sum(a["correct"] for a in answers) / n, 4)
    assert (tmp_path / "a" / "report.md").read_text().count(SPEC[provider]) >= 1

    r2 = run(evaluate(suite, server, tmp_path / "b", cache, "--answerer", SPEC[provider], provider=provider))
    assert r2.returncode == 0, r2.stderr
    assert server.count == n, "a warm cache must make zero calls"
    assert f"0 call(s), {n} from cache" in r2.stderr
    assert deterministic(tmp_path / "a") == deterministic(tmp_path / "b")
    assert_no_key_anywhere(tmp_path, texts=(r.stdout, r.stderr, r2.stdout, r2.stderr))


def judge_rule(model: str, question: str) -> str:
    """The fake judges: ``judge-a`` always says A, ``judge-b`` A for questions of even length else none,
    ``judge-c`` always B."""
    if model.endswith("judge-a"):
        return "A"
    if model.endswith("judge-b"):
        return "A" if len(question) % 2 == 0 else "none"
    return "B"


def scripted_judges(model: str, prompt: str, schema: dict[str, Any]) -> Any:
    if "judge" not in model:
        return None  # the answerer's free text: filled from the schema
    question = re.search(r"^Question: (.*)$", prompt, re.MULTILINE)
    assert question is not None
    return {"reason": "fake", "match": judge_rule(model, question.group(1))}


@pytest.mark.parametrize("answerer,judges", [
    ("openai/answerer", ["openai/judge-a", "openai/judge-b"]),
    ("gemini/answerer", ["gemini/judge-a", "openai/judge-b", "gemini/judge-c"]),
])
def test_free_text_judges_majority_and_agreement(answerer: str, judges: list[str], suite: Path,
                                                 tmp_path: Path) -> None:
    with FakeLLMServer(reply=scripted_judges) as srv:
        extra = ["--answerer", answerer, "--free-text", *[x for j in judges for x in ("--judge", j)]]
        r = run(evaluate(suite, srv, tmp_path / "a", tmp_path / "cache", *extra, provider="gemini"))
        assert r.returncode == 0, r.stderr
        n = n_questions(suite)
        assert srv.count <= n * (1 + len(judges))
        for j in judges:
            assert f"LLM judge {j}: " in r.stderr
    answers = rows(tmp_path / "a")
    even = [len(a["question"]) % 2 == 0 for a in answers]
    assert 0 < sum(even) < len(even), "the fake judges must disagree on some items"
    for a, e in zip(answers, even, strict=True):
        assert a["mode"] == "llm_free_text" and a["answer_text"] and a["failed"] is False
        assert [v["match"] for v in a["judges"]] == [judge_rule(j, a["question"]) for j in judges]
        assert a["majority"] == ("A" if e else None)  # 2 of 2 or 2 of 3 say A; otherwise no majority
        assert a["chosen"] == (0 if e else None)
        assert a["correct"] == (e and a["answer_index"] == 0)
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    fig = report["systems"]["full"]
    f = sum(even) / len(even)
    assert fig["overall"] == round(sum(a["correct"] for a in answers) / n, 4)
    stale = [a for a in answers if a["stale_index"] is not None]
    assert fig["stale_rate"] == (round(sum(a["chosen"] == a["stale_index"] for a in stale) / len(stale), 4)
                                 if stale else None)
    agree = fig["judge_agreement"]
    assert agree["judges"] == judges and agree["n"] == n
    if len(judges) == 2:  # A always vs A/none: unanimous on the even items
        assert agree["unanimous"] == round(f, 4)
        assert agree["fleiss_kappa"] == pytest.approx(-(1 - f) / (1 + f), abs=1e-4)
        assert agree["cohen_kappa"] == {f"{judges[0]} | {judges[1]}": 0.0}  # one judge constant: p_o = p_e
    else:  # A, A/none, B: never unanimous; P = f/3, P_e = ((1+f)^2 + 1 + (1-f)^2) / 9
        p_e = ((1 + f) ** 2 + 1 + (1 - f) ** 2) / 9
        assert agree["unanimous"] == 0.0
        assert agree["fleiss_kappa"] == pytest.approx((f / 3 - p_e) / (1 - p_e), abs=1e-4)
        assert set(agree["cohen_kappa"].values()) == {0.0}
    judged = report["config"]["judges"]
    assert judged["judges"] == judges and judged["prompt"] == "evaluate/judge" and len(judged["prompt_hash"]) == 64
    assert report["config"]["answerer"]["mode"] == "free_text"
    assert "Judges of free-text answers" in (tmp_path / "a" / "report.md").read_text()
    assert_no_key_anywhere(tmp_path, texts=(r.stdout, r.stderr))


def once_out_of_range(model: str, prompt: str, schema: dict[str, Any]) -> Any:
    """The third reply names an option that does not exist (schema-invalid, so retried)."""
    once_out_of_range.calls = getattr(once_out_of_range, "calls", 0) + 1  # type: ignore[attr-defined]
    if once_out_of_range.calls == 3:  # type: ignore[attr-defined]
        return {"reason": "fake", "answer": "Z"}
    return None


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_faults_are_retried_and_give_the_same_bytes(provider: str, suite: Path, tmp_path: Path) -> None:
    faults = {2: "429", 4: "500", 6: "truncated", 8: "missing", 10: "garbage"}
    once_out_of_range.calls = 0  # type: ignore[attr-defined]
    spec = ["--answerer", SPEC[provider], "--concurrency", "1"]
    with FakeLLMServer(faults=faults, retry_after=1, reply=once_out_of_range) as srv:
        r = run(evaluate(suite, srv, tmp_path / "s", tmp_path / "cache", *spec, provider=provider))
        assert r.returncode == 0, r.stderr
        assert srv.count == n_questions(suite) + len(faults) + 1
    with FakeLLMServer() as srv:
        r = run(evaluate(suite, srv, tmp_path / "ref", tmp_path / "cache-ref", *spec, provider=provider))
        assert r.returncode == 0, r.stderr
    assert deterministic(tmp_path / "s") == deterministic(tmp_path / "ref")


def test_retry_after_is_honoured(suite: Path) -> None:
    from dimobench.evaluate.llm_answerer import make_answerer
    from dimobench.evaluate.protocol import Recalled
    from dimobench.suite.load import load_suite

    q = load_suite(suite).qa[0]
    with FakeLLMServer(faults={1: "429"}, retry_after=3) as srv:
        answerer = make_answerer("openai/test", False, [], base_url=srv.url + "/v1", cache_dir=None, concurrency=1)
        choice = answerer.answer(q, [Recalled("I cooked at home", 0.9, [1])])
    assert choice.index is not None and choice.extra["failed"] is False
    assert answerer.llm.inner.waits == [3.0]  # type: ignore[attr-defined]


def test_failure_after_retries_is_recorded_exit_1_and_rerun_retries_only_it(suite: Path, tmp_path: Path) -> None:
    with FakeLLMServer(faults=dict.fromkeys(range(1, 6), "500")) as srv:  # the first question fails 5 times
        cmd = evaluate(suite, srv, tmp_path / "s", tmp_path / "cache", "--answerer", "openai/test",
                       "--concurrency", "1")
        r = run(cmd)
        assert r.returncode == 1, r.stderr
        assert "Traceback" not in r.stderr
        assert "1 answer(s) failed after their retries and count as wrong" in r.stderr
        answers = rows(tmp_path / "s")
        failed = [a for a in answers if a["failed"]]
        assert len(failed) == 1 and failed[0]["qa_id"] == answers[0]["qa_id"]
        assert failed[0]["chosen"] is None and failed[0]["correct"] is False
        assert "server error 500" in failed[0]["error"] and "after 5 attempt(s)" in failed[0]["error"]
        report = json.loads((tmp_path / "s" / "report.json").read_text())
        assert report["systems"]["full"]["failed"] == 1 and report["systems"]["full"]["n"] == len(answers)
        before = srv.count
        r = run([*cmd, "--resume"])  # the fault plan is spent: the rerun succeeds, calling only for the failed item
        assert r.returncode == 0, r.stderr
        assert srv.count == before + 1
        assert not any(a["failed"] for a in rows(tmp_path / "s"))
    assert_no_key_anywhere(tmp_path, texts=(r.stderr,))


def test_a_judge_that_never_gives_a_usable_verdict_is_named_once_in_the_error(suite: Path, tmp_path: Path) -> None:
    def reply(_model: str, _prompt: str, schema: dict[str, Any]) -> Any:
        return {"answer": "The same as before."} if set(schema.get("properties", {})) == {"answer"} else {}

    with FakeLLMServer(reply=reply) as srv:
        r = run(evaluate(suite, srv, tmp_path / "j", tmp_path / "cache", "--answerer", "openai/a", "--free-text",
                         "--judge", "openai/j", "--concurrency", "1"))
    assert r.returncode == 1, r.stderr
    failed = [a for a in rows(tmp_path / "j") if a["failed"]]
    assert failed and len(failed) == n_questions(suite)
    for a in failed:  # the backend's line already names the judge: it is not said twice
        assert a["error"].startswith("openai/j: reply does not match JudgeVerdict")
        assert a["error"].count("openai/j") == 1


def test_killed_run_repeats_only_calls_in_flight(suite: Path, tmp_path: Path) -> None:
    concurrency = 2
    spec = ["--answerer", "openai/test"]
    with FakeLLMServer() as srv:
        r = run(evaluate(suite, srv, tmp_path / "ref", tmp_path / "cache-ref", *spec))
        assert r.returncode == 0, r.stderr
        total = srv.count
    with FakeLLMServer(delay=0.1) as srv:
        cmd = evaluate(suite, srv, tmp_path / "s", tmp_path / "cache", *spec, "--concurrency", str(concurrency))
        before = kill_halfway(cmd, srv, total)
        cached = sum(1 for ln in (tmp_path / "cache" / "llm-replies.jsonl").read_bytes().splitlines() if ln.strip())
        assert 0 < cached < total and before - cached <= concurrency
        srv.delay = 0
        r = run([*cmd, "--resume"])
        assert r.returncode == 0, r.stderr
        assert srv.count - before == total - cached  # only what was not finished (in flight included)
    assert deterministic(tmp_path / "s") == deterministic(tmp_path / "ref")


@pytest.mark.parametrize("extra,var", [
    (["--answerer", "openai"], "OPENAI_API_KEY"),
    (["--answerer", "openai/test", "--free-text", "--judge", "gemini"], "GEMINI_API_KEY"),
])
def test_missing_key_is_one_line_exit_2_before_any_replay(extra: list[str], var: str, suite: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(var)
    out = tmp_path / "o"
    r = run([sys.executable, "-m", "dimobench", "evaluate", str(suite), "--system", "full", "--out", str(out),
             *extra])
    assert r.returncode == 2 and var in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not out.exists()


@pytest.mark.parametrize("extra,needle", [
    (["--judge", "openai"], "add --free-text"),
    (["--answerer", "openai", "--judge", "openai"], "add --free-text"),
    (["--free-text", "--judge", "openai"], "needs an LLM --answerer"),
    (["--answerer", "openai", "--free-text"], "at least one --judge"),
    (["--answerer", "openai", "--free-text", *["--judge", "openai/a", "--judge", "openai/b", "--judge",
                                                "gemini/c", "--judge", "gemini/d"]], "at most 3 judges"),
    (["--answerer", "openai", "--free-text", "--judge", "openai", "--judge", "openai/gpt-4o"], "given twice"),
    (["--answerer", "mistral/x"], "unknown provider"),
])
def test_bad_llm_options_are_one_line_exit_2(extra: list[str], needle: str, suite: Path, tmp_path: Path) -> None:
    r = run([sys.executable, "-m", "dimobench", "evaluate", str(suite), "--out", str(tmp_path / "o"), *extra])
    assert r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "o").exists()


def test_reply_models_reject_labels_out_of_range() -> None:
    model = choice_model(4)
    assert model.model_validate({"reason": "r", "answer": "D"}).answer == "D"
    for bad in ({"reason": "r", "answer": "E"}, {"reason": "r", "answer": 2}, {"answer": "A"}):
        with pytest.raises(ValidationError):
            model.model_validate(bad)
    assert verdict_model(1).model_validate({"reason": "r", "match": "none"}).match == "none"
    with pytest.raises(ValidationError):
        verdict_model(1).model_validate({"reason": "r", "match": "B"})


@pytest.mark.parametrize("votes,n,expected", [
    (["A", "A"], 2, "A"), (["A", "none"], 2, None), (["none", "none"], 2, "none"), (["A", "A", "B"], 3, "A"),
    (["A", "none", "B"], 3, None), (["A", None, "A"], 3, "A"), (["A", None], 2, None), ([None, None], 2, None),
])
def test_majority_is_strict_over_all_judges(votes: list[str | None], n: int, expected: str | None) -> None:
    assert majority(votes, n) == expected


def test_fleiss_kappa_known_values() -> None:
    # Fleiss (1971) as worked on Wikipedia: 10 items, 14 raters, 5 categories -> 0.210
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert scoring.fleiss_kappa(table) == pytest.approx(0.2099, abs=1e-4)
    assert scoring.fleiss_kappa([[2, 0], [0, 2]]) == 1.0
    assert scoring.fleiss_kappa([[2], [2]]) is None  # one category only: chance agreement 1, kappa 0/0
    assert scoring.fleiss_kappa([]) is None and scoring.fleiss_kappa([[1, 0]]) is None


def test_judge_agreement_skips_items_a_judge_failed() -> None:
    def row(*labels: str | None) -> dict[str, Any]:
        return {"judges": [{"judge": j, "match": m} for j, m in zip("xyz", labels, strict=False)]}

    rows_: list[dict[str, Any]] = [row("A", "A"), row("A", "none"), row("none", "none"), row("A", None), {}]
    out = scoring.judge_agreement(rows_)
    assert out is not None and out["n"] == 3 and out["unanimous"] == pytest.approx(2 / 3)
    assert out["cohen_kappa"]["x | y"] == pytest.approx(0.4)  # p_o 2/3, p_e 4/9
    assert scoring.judge_agreement([{"correct": True}]) is None
    single: Callable[[str], dict[str, Any]] = lambda m: {"judges": [{"judge": "x", "match": m}]}  # noqa: E731
    assert scoring.judge_agreement([single("A"), single("none")])["unanimous"] is None  # type: ignore[index]


@pytest.mark.parametrize("name,model", [("evaluate/answer_choice", "AnswerChoice"),
                                        ("evaluate/answer_free", "FreeAnswer"), ("evaluate/judge", "JudgeVerdict")])
def test_evaluate_prompts_declare_what_they_use(name: str, model: str) -> None:
    from dimobench import prompts
    from dimobench.evaluate.llm_answerer import FreeAnswer

    p = prompts.load(name)
    assert p.version == "1" and p.response_model == model and prompts.undeclared(name) == set()
    assert model in {choice_model(3).__name__, FreeAnswer.__name__, verdict_model(2).__name__}
