"""Adjudication: list the items annotators disagree on, then merge the lead's settled verdicts into the suite.

``adjudication.csv`` holds one row per disputed item (any label differs, or a verdict is blank for someone)
with every annotator's labels and an empty ``final_verdict``. ``merge`` takes the agreed verdict for the
other items (from the sheets) and the lead's ``final_verdict`` for the disputed ones, and writes
``human_verdicts.jsonl`` into the suite atomically, with its hash in ``manifest.json``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dimobench.errors import InputError
from dimobench.review.checks import ReviewSet
from dimobench.review.score import consensus, disagrees
from dimobench.review.sheets import FIELDS, VERDICT_LABELS, normalise_label, read_csv, write_csv
from dimobench.suite.io import atomic_write_text, read_json, read_jsonl, sha256_file, write_jsonl

HUMAN_VERDICTS = "human_verdicts.jsonl"


def adjudication_columns(names: Sequence[str]) -> list[str]:
    """Columns of ``adjudication.csv`` for these annotators."""
    per = [f"{n}_{f}" for n in names for f in (*FIELDS, "note")]
    return ["qa_id", "stratum", "disagree_on", "question", "gold", *per, "final_verdict", "lead_note",
            "sample_id"]


def disputed(rs: ReviewSet, qa_id: str) -> list[str]:
    """What is in dispute for an item: labels that differ, and ``verdict`` when anyone left it blank."""
    fields = [f for f in FIELDS if disagrees(rs, qa_id, f)]
    blank = [s.name for s in rs.sheets if s.labels[qa_id]["verdict"] is None]
    if blank and "verdict" not in fields:
        fields.insert(0, "verdict")
    return fields


def adjudication_rows(rs: ReviewSet) -> list[dict[str, str]]:
    """One row per disputed item, in sample order, with each annotator's labels; ``final_verdict`` empty."""
    rows = []
    for q in rs.qa_ids:
        fields = disputed(rs, q)
        if not fields:
            continue
        text = next((s.texts[q] for s in rs.sheets if s.texts.get(q, {}).get("question")), {})
        row = {"qa_id": q, "stratum": rs.strata.get(q, "all"), "disagree_on": ", ".join(fields),
               "question": text.get("question", ""), "gold": text.get("gold", ""), "final_verdict": "",
               "lead_note": "", "sample_id": rs.sample_id}
        for s in rs.sheets:
            row.update({f"{s.name}_{f}": s.labels[q][f] or "" for f in FIELDS})
            row[f"{s.name}_note"] = s.notes.get(q, "")
        rows.append(row)
    return rows


def write_adjudication(rs: ReviewSet, out: Path) -> int:
    """Write ``adjudication.csv``; returns the number of disputed items."""
    rows = adjudication_rows(rs)
    write_csv(out, adjudication_columns(rs.names), rows)
    return len(rows)


def annotators_of(header: Sequence[str]) -> list[str]:
    """Annotator names in an ``adjudication.csv`` header (its ``<name>_verdict`` columns)."""
    return [h[: -len("_verdict")] for h in header if h.endswith("_verdict") and h != "final_verdict"]


def read_adjudication(path: Path, rs: ReviewSet) -> dict[str, tuple[str | None, str, int]]:
    """``qa_id -> (final verdict or None, lead note, line)``, checked against the sheets' sample."""
    rows, _, header = read_csv(path, ("qa_id", "final_verdict", "sample_id"))
    covered = annotators_of(header)
    if sorted(covered) != sorted(rs.names):
        raise InputError(f"adjudication covers annotators {', '.join(covered) or '(none)'} but the sheets "
                         f"given are {', '.join(rs.names)}", path, 1, "header")
    known = set(rs.qa_ids)
    out: dict[str, tuple[str | None, str, int]] = {}
    for line, row in rows:
        q = row["qa_id"].strip()
        sid = row["sample_id"].strip()
        if sid != rs.sample_id:
            raise InputError(f"adjudication of sample {sid or '(blank)'}, but the sheets are sample "
                             f"{rs.sample_id}", path, line, "sample_id")
        if q not in known:
            raise InputError(f"{q or '(blank)'} is not in sample {rs.sample_id}", path, line, "qa_id")
        if q in out:
            raise InputError(f"duplicate qa_id {q} (first on line {out[q][2]})", path, line, "qa_id")
        final = normalise_label(row["final_verdict"], "final_verdict", path, line, VERDICT_LABELS)
        out[q] = (final, row.get("lead_note", "").strip(), line)
    return out


def settle(rs: ReviewSet, adjudication: dict[str, tuple[str | None, str, int]], path: Path
           ) -> list[dict[str, Any]]:
    """Human verdict per sample item: the lead's ``final_verdict``, else the verdict all annotators gave.

    Raises:
        InputError: a disputed item without a ``final_verdict`` (pointing at its row, or at the file when
            the item is not listed).
    """
    agreed = consensus(rs)
    records, open_items = [], []
    for q in rs.qa_ids:
        final, note, _ = adjudication.get(q, (None, "", 0))
        if final is not None:
            verdict, source = final, "adjudicated"
        elif q in agreed:  # a criterion may differ, the verdict does not
            verdict, source = agreed[q], "agreed"
        else:
            open_items.append(q)
            continue
        rec: dict[str, Any] = {"qa_id": q, "verdict": verdict, "source": source,
                               "annotators": {s.name: s.labels[q]["verdict"] for s in rs.sheets},
                               "sample_id": rs.sample_id}
        if note:
            rec["note"] = note
        records.append(rec)
    if open_items:
        first = open_items[0]
        line = adjudication[first][2] if first in adjudication else None
        what = "is empty" if first in adjudication else "is not listed"
        raise InputError(f"{len(open_items)} disputed item(s) not settled; {first} {what} (fill in ACCEPT, "
                         "REVISE or REJECT)", path, line, "final_verdict")
    return records


def merge_into_suite(suite: Path, records: list[dict[str, Any]]) -> Path:
    """Write ``human_verdicts.jsonl`` (suite order), then its hash and counts into ``manifest.json``.

    Both writes are atomic (temp file and ``os.replace``).
    """
    manifest_path = suite / "manifest.json"
    if not manifest_path.is_file() or not (suite / "qa.jsonl").is_file():
        raise InputError("not a suite: manifest.json or qa.jsonl is missing", suite)
    order = {str(data.get("qa_id")): i for i, (_, data) in enumerate(read_jsonl(suite / "qa.jsonl"))}
    missing = [r["qa_id"] for r in records if r["qa_id"] not in order]
    if missing:
        raise InputError(f"{missing[0]} is not a question of this suite ({len(missing)} sampled item(s) are "
                         "not; was the sample drawn from another suite?)", suite / "qa.jsonl", None, "qa_id")
    records = sorted(records, key=lambda r: order[r["qa_id"]])
    out = suite / HUMAN_VERDICTS
    write_jsonl(out, records)
    data = read_json(manifest_path)
    if not isinstance(data, dict) or not isinstance(data.get("files", {}), dict) or not isinstance(
            data.get("counts", {}), dict):
        raise InputError("not a suite manifest (expected an object with files and counts)", manifest_path)
    data["files"] = {**data.get("files", {}), HUMAN_VERDICTS: sha256_file(out)}
    by = Counter(r["verdict"] for r in records)
    data["counts"] = {**data.get("counts", {}), "human_verdicts": {k: by.get(k, 0) for k in VERDICT_LABELS}}
    atomic_write_text(manifest_path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return out


def read_human_verdicts(suite: Path) -> dict[str, str] | None:
    """``qa_id -> verdict`` from the suite's ``human_verdicts.jsonl``, or ``None`` when it has none."""
    path = suite / HUMAN_VERDICTS
    if not path.is_file():
        return None
    out = {}
    for line, data in read_jsonl(path):
        verdict = str(data.get("verdict", "")).upper()
        if verdict not in VERDICT_LABELS or not data.get("qa_id"):
            raise InputError(f"bad record (verdict {data.get('verdict')!r})", path, line, "verdict")
        out[str(data["qa_id"])] = verdict
    return out
