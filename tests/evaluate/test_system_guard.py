"""A hostile system under test cannot take the run down, hang it, exit it, shadow packages or read the gold.

Each system below is user code in a tmp directory, run as users run it (``dimobench evaluate --system
hostile:Class`` in a real process, or through ``make_system`` where a setting has no CLI flag yet).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dimobench.evaluate.protocol import MAX_TEXT, BadRecall, SystemFailure, normalise_items
from dimobench.evaluate.systems import make_system
from tests.helpers.suites import generate

HOSTILE = '''
import itertools, json, os, sys, time, zlib
from pathlib import Path

class Echo:
    def reset(self, persona_id):
        self.items = []
    def observe(self, turn):
        self.items.append({"text": turn.user, "score": 1.0, "source_turns": [turn["turn"]]})
    def recall(self, query, k):
        return self.items[-k:][::-1]
    def stats(self):
        return {"raw_items": len(self.items)}

class Endless(Echo):
    def recall(self, query, k):
        return ({"text": f"item {i}", "score": 1.0} for i in itertools.count())

class Sleepy(Echo):
    def recall(self, query, k):
        time.sleep(60)

class Exit(Echo):
    def observe(self, turn):
        raise SystemExit(0)

class Interrupt(Echo):
    def observe(self, turn):
        raise KeyboardInterrupt

class GenExit(Echo):
    def observe(self, turn):
        raise GeneratorExit

class Dies(Echo):
    def observe(self, turn):
        os._exit(0)

class IntRecall(Echo):
    def recall(self, query, k):
        return 5

class HugeScore(Echo):
    def recall(self, query, k):
        return [{"text": "x", "score": 10**400}]

class NanScore(Echo):
    def recall(self, query, k):
        return [{"text": "x", "score": float("nan")}]

class InfTurns(Echo):
    def recall(self, query, k):
        return [{"text": t["text"], "score": 1.0, "source_turns": [1e400, *t["source_turns"]]} for t in self.items[-k:]]

class Hog(Echo):
    def observe(self, turn):
        self.hoard = list(itertools.count())

class Noisy(Echo):
    def observe(self, turn):
        print('{"ok": "forged"}')
        os.write(1, b'{"fail": "died", "detail": "forged"}\\n')
        sys.stdin.read()
        super().observe(turn)

class Shadow(Echo):
    def __init__(self):
        import matplotlib
        assert Path(matplotlib.__file__).parent != Path.cwd(), matplotlib.__file__

class Cheat(Echo):
    """Looks for the suite (and its gold) wherever the harness might leak its path."""
    needs_latent_plan = True

    def __init__(self):
        seen = list(sys.argv) + [v for v in os.environ.values()]
        seen += Path("/proc/self/cmdline").read_bytes().decode(errors="replace").split("\\0")
        found = [s for s in seen if s and (Path(s) / "qa.jsonl").is_file()]
        self.gold = {}
        for suite in found[:1]:
            for line in (Path(suite) / "qa.jsonl").read_text().splitlines():
                q = json.loads(line)
                self.gold.setdefault((q["persona_id"], q["question"]), []).append(q["answer_index"])
        Path("found.json").write_text(json.dumps(found))

    def bind_suite(self, suite):
        Path("bound.txt").write_text(str(suite.path))

    def reset(self, persona_id):
        super().reset(persona_id)
        self.persona = persona_id

    def answer(self, question, options):
        queue = self.gold.get((self.persona, question))
        return queue.pop(0) if queue else zlib.crc32(question.encode()) % len(options)
'''


@pytest.fixture(scope="module")
def tiny_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("suites") / "tiny", turns=120, personas=2, seed=1)


@pytest.fixture
def here(tmp_path: Path) -> Path:
    (tmp_path / "hostile.py").write_text(HOSTILE)
    return tmp_path


def _bound() -> None:
    # a regression (an endless recall read whole) fails the test instead of exhausting the machine
    resource.setrlimit(resource.RLIMIT_DATA, (4 << 30, 4 << 30))


def _evaluate(suite: Path, cwd: Path, *systems: str, plots: bool = False,
              env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    args = ["evaluate", str(suite), "--out", str(cwd / "out"), "--embedding", "hashing", "--bootstrap", "0",
            *(["--plots"] if plots else ["--no-plots"]), *[x for s in systems for x in ("--system", s)]]
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "dimobench", *args], capture_output=True, text=True, cwd=cwd,
                         env={**os.environ, "COLUMNS": "120", **(env or {})}, timeout=120, preexec_fn=_bound)
    return res, time.monotonic() - t0


def _one_line_failure(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout
    return res.stderr.strip().splitlines()[-1]


def _answers(cwd: Path, system: str) -> list[dict[str, object]]:
    name = "answers-" + system.replace(":", "_") + ".jsonl"
    return [json.loads(x) for x in (cwd / "out" / name).read_text().splitlines()]


def test_endless_generator_recall_takes_k_items_and_finishes(tiny_suite: Path, here: Path) -> None:
    res, took = _evaluate(tiny_suite, here, "hostile:Endless")
    assert res.returncode == 0, res.stderr
    rows = _answers(here, "hostile:Endless")
    assert rows and all(len(r["recalled"]) == 10 for r in rows)
    assert took < 30


@pytest.mark.parametrize("system, detail", [
    ("hostile:Exit", "failed in observe at persona p01 turn 1: SystemExit: 0"),
    ("hostile:Interrupt", "failed in observe at persona p01 turn 1: KeyboardInterrupt"),
    ("hostile:GenExit", "failed in observe at persona p01 turn 1: GeneratorExit"),
    ("hostile:Dies", "died in observe at persona p01 turn 1: its worker process exited with code 0"),
])
def test_exits_raised_by_a_system_fail_the_run_with_one_line(tiny_suite: Path, here: Path, system: str,
                                                             detail: str) -> None:
    res, _ = _evaluate(tiny_suite, here, "none", system)
    assert _one_line_failure(res) == f"dimobench: error: system {system!r} {detail}"
    report = json.loads((here / "out" / "report.json").read_text())
    assert list(report["systems"]) == ["none"] and report["config"]["status"] == "partial"


@pytest.mark.parametrize("system, detail", [
    ("hostile:IntRecall", "recall returned int 5, expected a list of items"),
    ("hostile:HugeScore", "recall item 0 has a non-finite score 1000000000"),
    ("hostile:NanScore", "recall item 0 has a non-finite score nan"),
])
def test_bad_recall_results_fail_with_one_line(tiny_suite: Path, here: Path, system: str, detail: str) -> None:
    line = _one_line_failure(_evaluate(tiny_suite, here, system)[0])
    assert line.startswith(f"dimobench: error: system {system!r} returned a bad recall at persona p01 turn 2: "
                           f"{detail}"), line


def test_source_turns_that_are_no_turn_numbers_are_dropped(tiny_suite: Path, here: Path) -> None:
    res, _ = _evaluate(tiny_suite, here, "hostile:InfTurns")
    assert res.returncode == 0, res.stderr
    recalled = [it for r in _answers(here, "hostile:InfTurns") for it in r["recalled"]]
    assert recalled and all(len(it["source_turns"]) == 1 and it["source_turns"][0] >= 1 for it in recalled)


def test_sleeping_recall_times_out_and_its_worker_is_ended(tiny_suite: Path, here: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from dimobench.embed import get_embedder
    from dimobench.evaluate.answerer import OfflineAnswerer
    from dimobench.evaluate.replay import run_system
    from dimobench.suite.load import load_suite

    monkeypatch.chdir(here)
    system = make_system("hostile:Sleepy", call_timeout_s=1)
    t0 = time.monotonic()
    with pytest.raises(SystemFailure) as err:
        run_system("hostile:Sleepy", system, load_suite(tiny_suite), "tiny", OfflineAnswerer(get_embedder("hashing")),
                   10)
    assert str(err.value) == "system 'hostile:Sleepy' timed out after 1s in recall at persona p01 turn 2"
    assert time.monotonic() - t0 < 10
    assert system.transport.proc.poll() is not None


def test_a_runaway_system_hits_its_memory_bound(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(here)
    with make_system("hostile:Hog", memory_mb=400) as system:
        system.reset("p01")
        with pytest.raises(SystemFailure) as err:
            system.observe({"turn": 1, "session": 1, "timestamp": "t", "user": "hi", "assistant": "hello"})
    assert str(err.value) == ("system 'hostile:Hog' failed in observe at persona p01 turn 1: MemoryError "
                              "(over its memory bound of 400 MiB)")


def test_a_system_that_prints_and_reads_stdin_cannot_corrupt_the_protocol(tiny_suite: Path, here: Path) -> None:
    res, _ = _evaluate(tiny_suite, here, "hostile:Echo", "hostile:Noisy")
    assert res.returncode == 0, res.stderr
    assert '{"ok": "forged"}' in res.stderr and "forged" not in res.stdout
    report = json.loads((here / "out" / "report.json").read_text())
    assert report["systems"]["hostile:Noisy"]["overall"] == report["systems"]["hostile:Echo"]["overall"]


def test_a_matplotlib_py_in_the_working_directory_shadows_nothing(tiny_suite: Path, here: Path) -> None:
    (here / "matplotlib.py").write_text("raise RuntimeError('the stray matplotlib.py was imported')\n")
    res, _ = _evaluate(tiny_suite, here, "hostile:Shadow", plots=True)
    assert res.returncode == 0, res.stderr
    assert (here / "out" / "accuracy-tiny.png").stat().st_size > 0


def test_a_system_finds_no_suite_path_and_scores_at_chance(tiny_suite: Path, here: Path) -> None:
    res, _ = _evaluate(tiny_suite, here, "hostile:Cheat", env={"DIMOBENCH_SUITE_HINT": str(tiny_suite)})
    assert res.returncode == 0, res.stderr
    assert json.loads((here / "found.json").read_text()) == []
    assert not (here / "bound.txt").exists()  # bind_suite is for the built-in oracle only
    rows = _answers(here, "hostile:Cheat")
    assert {r["mode"] for r in rows} == {"system"}
    assert sum(bool(r["correct"]) for r in rows) / len(rows) < 0.6  # four options: chance is 0.25


def test_answer_and_stats_show_only_when_the_system_has_them(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(here)
    with make_system("hostile:Echo") as echo, make_system("hostile:Cheat") as cheat:
        assert not hasattr(echo, "answer") and callable(echo.stats) and not hasattr(echo, "bind_suite")
        assert callable(cheat.answer) and not hasattr(cheat, "bind_suite")
    assert hasattr(make_system("oracle"), "bind_suite")  # the built-in oracle stays in process


def test_normalise_items_is_lazy_bounded_and_plain() -> None:
    items = normalise_items(iter([{"text": "a" * (MAX_TEXT + 5), "score": np.float32(0.5),
                                   "source_turns": [np.int64(3), 4.0, 4.5, -1, True, "7", 2**40]}]), 5)
    assert items[0].text == "a" * MAX_TEXT and items[0].score == 0.5 and items[0].source_turns == [3, 4]
    assert type(items[0].source_turns[0]) is int
    for bad in (5, "text", {"text": "x"}, [{"text": "x", "score": float("inf")}], [{"text": "x", "score": 10**400}],
                [{"text": "x", "source_turns": 7}]):
        with pytest.raises(BadRecall):
            normalise_items(bad, 3)


def test_hide_keeps_variables_naming_a_suite_from_the_worker(tiny_suite: Path, here: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(here)
    monkeypatch.setenv("MY_SUITE", str(tiny_suite))
    make_system("hostile:Cheat").close()  # the scan works: without hide it finds the suite
    assert json.loads((here / "found.json").read_text()) == [str(tiny_suite)]
    make_system("hostile:Cheat", hide=[tiny_suite]).close()
    assert json.loads((here / "found.json").read_text()) == []


def test_call_timeout_on_the_command_line_ends_a_hanging_system_in_one_line(tiny_suite: Path, here: Path) -> None:
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "dimobench", "evaluate", str(tiny_suite), "--out", str(here / "out"),
                          "--embedding", "hashing", "--bootstrap", "0", "--no-plots", "--system", "hostile:Sleepy",
                          "--call-timeout", "1"], capture_output=True, text=True, cwd=here, timeout=120)
    took = time.monotonic() - t0
    assert _one_line_failure(res) == ("dimobench: error: system 'hostile:Sleepy' timed out after 1s in recall at "
                                      "persona p01 turn 2")
    assert took < 30, took  # the 60 s sleep was cut short
