"""Fuzzing every input reader: random bytes, random JSON and mutations of real files never give a traceback.

``dimobench validate`` and ``dimobench import <source>`` are called in process (typer's ``CliRunner`` with
``catch_exceptions=False``, so an uncaught exception fails the example) on a real small suite and on real
importer inputs (``/work/shared/data/locomo10.json`` cut down, and the documented-format sources of
``tests/helpers/importer_sources.py``) with lines, values or bytes replaced. The property: exit 0 or 2; on 2
stderr is one ``dimobench: error:`` line (validate first lists one line per problem); never "Traceback".
An import that succeeds must give a suite that validates. The worst inputs also run as real processes.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dimobench.cli.app import app
from tests.helpers.cli import run_cli
from tests.helpers.importer_sources import (
    LOCOMO_REAL,
    amemgym_users,
    locomo_sample,
    longmemeval_items,
    personamem_files,
)
from tests.helpers.suites import generate

FUZZ = settings(max_examples=int(os.environ.get("DIMOBENCH_FUZZ_EXAMPLES", "60")), deadline=None,
                suppress_health_check=list(HealthCheck))
"""60 examples per target keeps the file under a minute; set DIMOBENCH_FUZZ_EXAMPLES for a longer hunt."""
SUITE_FILES = ("manifest.json", "personas.jsonl", "schedules.jsonl", "dialogues.jsonl", "qa.jsonl")

scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=10**29, max_value=10**40)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12)
           | st.sampled_from(["", "0", "5", "p01", "p01-q0001", "ACCEPT", "cue", "stable", "\u2028", "\ud800"]))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=15)
RAW = "@@raw@@"
"""Placeholder a mutation may put anywhere; :func:`_dumps` swaps it for one of :data:`HOSTILE` raw tokens."""
HOSTILE = [b"NaN", b"-Infinity", b"1e999", b"9" * 5000, b"[" * 5000 + b"]" * 5000, b'"\\udc00"', b"\"\xff\""]
values = json_values | st.just(RAW)


def _dumps(value: Any, ascii_only: bool = False, raw: int = 0) -> bytes:
    """JSON as a careless or hostile writer makes it: NaN passes, a lone surrogate is a ``\\ud800`` escape or
    its raw (invalid UTF-8) bytes, and :data:`RAW` becomes ``HOSTILE[raw]``."""
    text = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    return text.replace(json.dumps(RAW).encode(), HOSTILE[raw % len(HOSTILE)])


def _hostile_dumps(data: st.DataObject, value: Any) -> bytes:
    return _dumps(value, data.draw(st.booleans()), data.draw(st.integers(0, len(HOSTILE) - 1)))


def _invoke(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    err = result.stderr.strip().splitlines()
    assert "Traceback" not in result.output, result.output
    assert result.exit_code in (0, 2), (result.exit_code, result.output)
    return result.exit_code, err


def _assert_validate(suite: Path) -> int:
    code, err = _invoke("validate", str(suite))
    if code == 2:
        assert err[-1].startswith("dimobench: error: "), err
        assert all(line.startswith(f"{suite}/") for line in err[:-1]), err
    return code


def _assert_import(source: str, src: Path, out: Path, *extra: str) -> None:
    code, err = _invoke("import", source, str(src), "--out", str(out), *extra)
    if code == 2:
        assert len(err) == 1 and err[0].startswith("dimobench: error: "), err
        return
    assert _assert_validate(out) == 0, f"{source} import of a fuzzed input gave an invalid suite"


@st.composite
def mutated(draw: st.DrawFn, doc: Any) -> Any:
    """``doc`` with one value somewhere inside replaced by random JSON, or one key or item removed."""
    doc = copy.deepcopy(doc)
    parent: Any = None
    key: Any = None
    node = doc
    while isinstance(node, (dict, list)) and node and draw(st.integers(0, 4)) > 0:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        parent, key = node, draw(st.sampled_from(keys))
        node = node[key]
    if parent is None:
        return draw(values)
    if draw(st.booleans()) and draw(st.integers(0, 3)) == 0:
        del parent[key]
    else:
        parent[key] = draw(values)
    return doc


@st.composite
def byte_mutation(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few random bytes inserted, overwritten or cut out."""
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        what = draw(st.sampled_from(["insert", "overwrite", "cut"]))
        junk = draw(st.binary(min_size=1, max_size=4) | st.sampled_from(
            [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\n", b"\r", b"\xe2\x80\xa8", b"NaN", b'"', b"{", b"]"]))
        if what == "insert":
            data = data[:at] + junk + data[at:]
        elif what == "overwrite":
            data = data[:at] + junk + data[at + len(junk):]
        else:
            data = data[:at] + data[at + draw(st.integers(1, 8)):]
    return data


@pytest.fixture(scope="module")
def tiny_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One persona, 60 turns, one drift: every record file, small enough to copy per example."""
    return generate(tmp_path_factory.mktemp("fuzz") / "tiny", turns=60, drifts=1, personas=1, seed=3)


@pytest.fixture
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


def _fresh(tiny: Path) -> tuple[Path, Path]:
    root = Path(tempfile.mkdtemp())
    suite = root / "s"
    shutil.copytree(tiny, suite, ignore=shutil.ignore_patterns(".dimobench"))
    return root, suite


@FUZZ
@given(data=st.data())
def test_validate_survives_random_bytes_and_byte_mutations(tiny_suite: Path, data: st.DataObject) -> None:
    root, suite = _fresh(tiny_suite)
    try:
        name = data.draw(st.sampled_from([*SUITE_FILES, "verdicts.jsonl"]))
        original = (suite / name).read_bytes() if (suite / name).exists() else b""
        new = data.draw(st.binary(max_size=200) | byte_mutation(original) if original else st.binary(max_size=200))
        (suite / name).write_bytes(new)
        _assert_validate(suite)
    finally:
        shutil.rmtree(root)


@FUZZ
@given(data=st.data())
def test_validate_survives_random_json_in_real_lines(tiny_suite: Path, data: st.DataObject) -> None:
    root, suite = _fresh(tiny_suite)
    try:
        name = data.draw(st.sampled_from(SUITE_FILES))
        if name == "manifest.json":
            doc = json.loads((suite / name).read_text())
            (suite / name).write_bytes(_hostile_dumps(data, data.draw(mutated(doc))))
        else:
            lines = (suite / name).read_bytes().splitlines()
            i = data.draw(st.integers(0, len(lines) - 1))
            lines[i] = _hostile_dumps(data, data.draw(mutated(json.loads(lines[i])) | values))
            (suite / name).write_bytes(b"\n".join(lines) + b"\n")
        _assert_validate(suite)
    finally:
        shutil.rmtree(root)


def _locomo_real_cut() -> list[dict[str, Any]]:
    """The first real LoCoMo sample, cut to two sessions and 12 questions (the whole file is 2.8 MB)."""
    if not LOCOMO_REAL.is_file():
        return locomo_sample()
    sample = json.loads(LOCOMO_REAL.read_text(encoding="utf-8"))[0]
    conv = {k: v for k, v in sample["conversation"].items()
            if not k.startswith("session_") or k.split("_")[1] in ("1", "2")}
    return [{**sample, "conversation": conv, "qa": sample["qa"][:12]}]


JSON_SOURCES = {"locomo": _locomo_real_cut, "longmemeval": longmemeval_items, "amemgym": amemgym_users}


@FUZZ
@given(data=st.data())
def test_json_importers_survive_mutated_real_inputs(scratch: Path, data: st.DataObject) -> None:
    source = data.draw(st.sampled_from(sorted(JSON_SOURCES)))
    doc = JSON_SOURCES[source]()
    with tempfile.TemporaryDirectory(dir=scratch) as d:
        src = Path(d) / "in.json"
        how = data.draw(st.sampled_from(["value", "bytes", "random"]))
        if how == "value":
            src.write_bytes(_hostile_dumps(data, data.draw(mutated(doc))))
        elif how == "bytes":
            src.write_bytes(data.draw(byte_mutation(json.dumps(doc, indent=1).encode())))
        else:
            src.write_bytes(data.draw(st.binary(max_size=100) | json_values.map(_dumps)))
        _assert_import(source, src, Path(d) / "out")


@FUZZ
@given(data=st.data())
def test_personamem_importer_survives_mutated_csv_and_contexts(scratch: Path, data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory(dir=scratch) as d:
        root = Path(d)
        q = personamem_files(root)
        ctx = root / "shared_contexts_32k.jsonl"
        target = data.draw(st.sampled_from(["cell", "csv-bytes", "context-line", "context-bytes"]))
        if target == "cell":
            with q.open(encoding="utf-8", newline="") as fh:
                rows = list(csv.DictReader(fh))
            row = data.draw(st.integers(0, len(rows) - 1))
            col = data.draw(st.sampled_from(["end_index_in_shared_context"] * 4 + [
                "all_options", "all_options", "correct_answer", "shared_context_id", "question_id", *rows[row]]))
            rows[row][col] = data.draw(st.sampled_from(
                ["inf", "-inf", "Infinity", "nan", "1e400", "-1", "0", "3.0", "9" * 50, "(z)", "[]", "{[1]: 2}",
                 "['a'", "[" * 300, "['(a) x', 1e999]"]) | st.text(max_size=20))
            personamem_files(root, rows=rows)
        elif target == "csv-bytes":
            q.write_bytes(data.draw(byte_mutation(q.read_bytes())))
        elif target == "context-line":
            lines = ctx.read_bytes().split(b"\n")
            lines[0] = _hostile_dumps(data, data.draw(mutated(json.loads(lines[0])) | values))
            ctx.write_bytes(b"\n".join(lines))
        else:
            ctx.write_bytes(data.draw(byte_mutation(ctx.read_bytes())))
        _assert_import("personamem", q, root / "out")


@pytest.mark.parametrize("payload", [b"[" * 100_000 + b"]" * 100_000, b"1" * 5000, b'{"a": "\xff"}'])
def test_worst_inputs_in_real_processes(tmp_path: Path, tiny_suite: Path, payload: bytes) -> None:
    suite = tmp_path / "s"
    shutil.copytree(tiny_suite, suite, ignore=shutil.ignore_patterns(".dimobench"))
    lines = (suite / "qa.jsonl").read_bytes().split(b"\n")
    lines[1] = payload
    (suite / "qa.jsonl").write_bytes(b"\n".join(lines))
    r = run_cli("validate", str(suite))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{suite}/qa.jsonl:2: " in r.stderr
    src = tmp_path / "locomo.json"
    src.write_bytes(b'[{"sample_id": ' + payload + b"}]")
    r = run_cli("import", "locomo", str(src), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[0].startswith(f"dimobench: error: {src}:1: ")
    assert len(r.stderr.strip().splitlines()) == 1
