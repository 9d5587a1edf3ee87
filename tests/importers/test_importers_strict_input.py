"""Every importer reads its input strictly: valid odd text is kept, hostile values are one located error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dimobench.errors import InputError
from dimobench.importers import import_benchmark
from dimobench.importers.personamem import load as load_personamem
from dimobench.suite.load import load_suite
from dimobench.suite.validate import validate_suite
from tests.helpers.cli import run_cli
from tests.helpers.importer_sources import amemgym_users, locomo_sample, longmemeval_items, personamem_files, write_json

SEPARATORS = "a\u2028b\u2029c\x85d"
"""Characters ``str.splitlines()`` splits on that JSON allows raw inside a string (ensure_ascii=False writes them)."""


def test_personamem_keeps_messages_holding_line_separators(tmp_path: Path) -> None:
    ctx = {"ctx1": [{"role": "system", "content": "Persona."}, {"role": "user", "content": SEPARATORS},
                    {"role": "assistant", "content": "ok"}]}
    q = personamem_files(tmp_path, rows=_pm_row("3"), contexts=ctx)
    (tmp_path / "shared_contexts_32k.jsonl").write_text(json.dumps(ctx, ensure_ascii=False) + "\n",
                                                       encoding="utf-8")
    assert "\u2028" in (tmp_path / "shared_contexts_32k.jsonl").read_text(encoding="utf-8")
    import_benchmark("personamem", q, tmp_path / "out")
    assert validate_suite(tmp_path / "out") == []
    assert load_suite(tmp_path / "out").turns_of("ctx1")[1].user == SEPARATORS


def _pm_row(end: str) -> list[dict[str, str]]:
    return [{"persona_id": "7", "question_id": "x1", "question_type": "suggest_new_ideas",
             "user_question_or_message": "Q?", "correct_answer": "(a)",
             "all_options": json.dumps(["(a) one", "(b) two"]), "shared_context_id": "ctx1",
             "end_index_in_shared_context": end}]


@pytest.mark.parametrize("end", ["inf", "-inf", "nan", "1e400", "2.5", "1e1", "9" * 5000, "true", " "])
def test_personamem_end_index_must_be_a_whole_count(tmp_path: Path, end: str) -> None:
    q = personamem_files(tmp_path, rows=_pm_row(end))
    out = tmp_path / "out"
    r = run_cli("import", "personamem", str(q), "--out", str(out)) if end == "inf" else None
    if r is not None:
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.strip().splitlines() == [
            f"dimobench: error: {q}:2: end_index_in_shared_context: 'inf' is not a message count in 1..6"]
    with pytest.raises(InputError, match=r":2: end_index_in_shared_context: .* is not a message count"):
        load_personamem(q)


def test_personamem_end_index_as_pandas_writes_it(tmp_path: Path) -> None:
    q = personamem_files(tmp_path, rows=_pm_row("3.0"))
    assert load_personamem(q).qa[0].ask_turn == 3


@pytest.mark.parametrize("options", ["{[1]: 2}", "[" * 500 + "]" * 500, "['a', " + "9" * 5000 + "]",
                                     '["a", NaN]', "[1e999, 'x']"])
def test_personamem_odd_option_lists_are_located(tmp_path: Path, options: str) -> None:
    q = personamem_files(tmp_path, rows=[_pm_row("3")[0] | {"all_options": options}])
    with pytest.raises(InputError, match=r":2: all_options: expected a list of option strings"):
        load_personamem(q)


def test_personamem_context_lines_are_strict(tmp_path: Path) -> None:
    q = personamem_files(tmp_path, rows=_pm_row("3"))
    ctx = tmp_path / "shared_contexts_32k.jsonl"
    good = ctx.read_bytes()
    ctx.write_bytes(good + b'{"ctx2": [{"role": "user", "content": NaN}]}\n')
    with pytest.raises(InputError, match=r"shared_contexts_32k\.jsonl:3: NaN is not valid JSON"):
        load_personamem(q)
    ctx.write_bytes(good + b'{"ctx2": [{"role": "user", "content": "caf\xe9"}]}\n')
    with pytest.raises(InputError, match=r"shared_contexts_32k\.jsonl:3: not UTF-8 \(byte 0xe9 at column 43\)"):
        load_personamem(q)
    ctx.write_bytes(good + good.split(b"\n")[0] + b"\n")
    with pytest.raises(InputError, match=r":3: ctx1: duplicate shared_context_id"):
        load_personamem(q)


def _sources(tmp: Path) -> dict[str, Path]:
    return {"locomo": write_json(tmp / "locomo.json", locomo_sample()),
            "longmemeval": write_json(tmp / "lme.json", longmemeval_items()),
            "amemgym": write_json(tmp / "amemgym.json", amemgym_users())}


@pytest.mark.parametrize("source", ["locomo", "longmemeval", "amemgym"])
@pytest.mark.parametrize("hostile,expect", [
    (lambda t: b"\n \xff" + t.encode(), ":2: not UTF-8 (byte 0xff at column 2)"),
    (lambda t: t.rstrip()[:-1] + ', NaN]', ": NaN is not valid JSON"),
    (lambda t: t.rstrip()[:-1] + ", " + "[" * 100_000 + "]" * 100_000 + "]", "JSON nested deeper than 64"),
    (lambda t: t.rstrip()[:-1] + ", " + "7" * 5000 + "]", "integer with 5000 digits is too large"),
    (lambda t: t.rstrip()[:-1] + ', "\\udc00"]', "lone surrogate"),
])
def test_json_importers_refuse_hostile_json_in_one_line(tmp_path: Path, source: str, hostile, expect: str  # type: ignore[no-untyped-def]
                                                         ) -> None:
    src = _sources(tmp_path)[source]
    text = src.read_text(encoding="utf-8")
    bad = hostile(text)
    src.write_bytes(bad if isinstance(bad, bytes) else bad.encode("utf-8"))
    with pytest.raises(InputError) as exc:
        import_benchmark(source, src, tmp_path / "out")
    assert str(exc.value).startswith(str(src)) and expect in str(exc.value), exc.value
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("source", ["locomo", "longmemeval", "personamem", "amemgym"])
def test_a_directory_or_missing_file_is_one_line(tmp_path: Path, source: str) -> None:
    (tmp_path / "dir.json").mkdir()
    r = run_cli("import", source, str(tmp_path / "dir.json"), "--out", str(tmp_path / "out"),
                *(["--contexts", str(tmp_path / "dir.json")] if source == "personamem" else []))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines() == [f"dimobench: error: {tmp_path}/dir.json: is a directory, not a file"]


def test_lax_numbers_in_sources_are_refused(tmp_path: Path) -> None:
    data = locomo_sample()
    data[0]["qa"][0]["category"] = 4.0
    with pytest.raises(InputError, match=r"\[0\]\.qa\[0\]\.category: expected int, got float"):
        import_benchmark("locomo", write_json(tmp_path / "l.json", data), tmp_path / "out")
    data[0]["qa"][0]["category"] = True
    with pytest.raises(InputError, match=r"\[0\]\.qa\[0\]\.category: expected int, got bool"):
        import_benchmark("locomo", write_json(tmp_path / "l.json", data), tmp_path / "out")


@pytest.mark.parametrize("source,edit,where", [
    ("longmemeval", lambda d: d[0].update(question_id=True), r"\[0\]\.question_id: expected str or int, got bool"),
    ("amemgym", lambda d: d[0].update(id=False), r"\[0\]\.id: expected str or int, got bool"),
    ("locomo", lambda d: d[0]["qa"][1].update(answer=True), r"\[0\]\.qa\[1\]\.answer: expected str or int or "
                                                             r"float, got bool"),
])
def test_booleans_are_not_ids_or_answers(tmp_path: Path, source: str, edit, where: str) -> None:  # type: ignore[no-untyped-def]
    data = {"locomo": locomo_sample, "longmemeval": longmemeval_items, "amemgym": amemgym_users}[source]()
    edit(data)
    with pytest.raises(InputError, match=where):
        import_benchmark(source, write_json(tmp_path / "in.json", data), tmp_path / "out")
