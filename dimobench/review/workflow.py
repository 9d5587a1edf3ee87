"""The four review steps as library calls: sample, score, adjudicate, merge (the CLI only wraps these)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dimobench.errors import ConfigError, InputError
from dimobench.review.sampling import DEFAULT_BY, Sample, draw_sample
from dimobench.review.sheets import SHEET_COLUMNS, annotator_names, sheet_row, write_csv
from dimobench.suite.io import atomic_write_text, write_jsonl
from dimobench.suite.outdir import claim_out, lock_folder

SAMPLE_FILE = "sample.jsonl"
SOURCE_FILE = "source.json"
"""Where the sample was drawn from, so ``review serve`` finds the dialogue without being told."""


def sample_suite(suite_path: Path, out: Path, frac: float = 0.2, by: Sequence[str] = DEFAULT_BY,
                 annotators: int = 2, names: Sequence[str] | None = None, calibration: int = 30,
                 seed: int = 0, force: bool = False) -> tuple[Sample, list[Path]]:
    """Draw a stratified sample of a suite and write ``sample.jsonl`` and one blind sheet per annotator.

    Returns:
        The sample and the sheet paths.
    """
    from dimobench.suite.load import load_suite

    people = annotator_names(annotators, names)
    suite = load_suite(suite_path)
    sample = draw_sample(suite.qa, frac=frac, by=by, calibration=calibration, seed=seed)
    if not sample.items:
        raise ConfigError(f"--frac {frac:g} draws no question from the {len(suite.qa)} in {suite_path}; "
                          f"nothing to review")
    with claim_out(out, "review sample", force):
        by_id = {q.qa_id: q for q in suite.qa}
        turns: dict[str, dict[int, Any]] = {}
        for t in suite.dialogues:
            turns.setdefault(t.persona_id, {})[t.turn] = t
        rows = [sheet_row(by_id[it.qa_id], turns.get(by_id[it.qa_id].persona_id, {}), sample.sample_id,
                          it.stratum, it.calibration) for it in sample.items]
        write_jsonl(out / SAMPLE_FILE, [{"qa_id": it.qa_id, "stratum": it.stratum, "calibration": it.calibration,
                                         "sample_id": sample.sample_id} for it in sample.items])
        atomic_write_text(out / SOURCE_FILE, json.dumps({"suite": str(Path(suite_path).resolve())}) + "\n")
        paths = []
        for name in people:
            path = out / f"sheet_{name}.csv"
            write_csv(path, SHEET_COLUMNS, rows)
            paths.append(path)
    return sample, paths


def sample_source(sample_dir: Path) -> Path | None:
    """The suite folder ``review sample`` recorded for ``sample_dir``, if it is still there."""
    try:
        data = json.loads((sample_dir / SOURCE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    path = Path(data["suite"]) if isinstance(data, dict) and isinstance(data.get("suite"), str) else None
    return path if path is not None and path.is_dir() else None


def _suite_verdicts(suite_path: Path, qa_ids: Sequence[str]) -> tuple[dict[str, Any], dict[str, str] | None]:
    from dimobench.review.adjudicate import read_human_verdicts
    from dimobench.suite.load import load_suite

    suite = load_suite(suite_path)
    known = {q.qa_id for q in suite.qa}
    missing = [q for q in qa_ids if q not in known]
    if missing:
        raise InputError(f"{missing[0]} is not a question of this suite ({len(missing)} sampled item(s) are "
                         "not)", suite_path / "qa.jsonl", None, "qa_id")
    return {v.qa_id: v for v in suite.verdicts}, read_human_verdicts(suite_path)


def score_sheets(sheets: Sequence[Path], out: Path, suite: Path | None = None, min_kappa: float = 0.75,
                 sample: Path | None = None, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Check and score sheets; write ``agreement.json`` and ``agreement.md`` beside it; return the figures."""
    from dimobench.review.checks import load_sheets
    from dimobench.review.markdown import render_markdown
    from dimobench.review.score import compute_agreement

    if not -1.0 <= min_kappa <= 1.0:
        raise ConfigError(f"--min-kappa must be between -1 and 1 (got {min_kappa})")
    rs = load_sheets(list(sheets), sample)
    verdicts, human = _suite_verdicts(suite, rs.qa_ids) if suite is not None else (None, None)
    result = compute_agreement(rs, min_kappa=min_kappa, verdicts=verdicts, human=human, n_boot=n_boot,
                               seed=seed)
    atomic_write_text(out, json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(out.with_suffix(".md") if out.suffix == ".json" else out.parent / "agreement.md",
                      render_markdown(result))
    return result


def adjudicate_sheets(sheets: Sequence[Path], out: Path, sample: Path | None = None) -> int:
    """Write ``adjudication.csv`` listing the disputed items; returns how many there are."""
    from dimobench.review.adjudicate import write_adjudication
    from dimobench.review.checks import load_sheets

    return write_adjudication(load_sheets(list(sheets), sample), out)


def merge_adjudication(adjudication: Path, suite: Path, sheets: Sequence[Path] = (),
                       sample: Path | None = None) -> tuple[Path, dict[str, int]]:
    """Settle every sampled item and write ``human_verdicts.jsonl`` into the suite.

    Args:
        adjudication: the lead's ``adjudication.csv``.
        suite: the suite directory.
        sheets: the annotators' sheets; default: ``sheet_*.csv`` beside the adjudication file.
        sample: ``sample.jsonl``; default: beside the first sheet.

    Returns:
        The written file and how many verdicts came from agreement and from adjudication.
    """
    from dimobench.review.adjudicate import merge_into_suite, read_adjudication, settle
    from dimobench.review.checks import load_sheets

    if not adjudication.is_file():
        raise InputError("no such file", adjudication)
    found = list(sheets) or _sheets_beside(adjudication)
    rs = load_sheets(found, sample)
    records = settle(rs, read_adjudication(adjudication, rs), adjudication)
    from contextlib import nullcontext

    # the suite's manifest is rewritten: one writer at a time (a folder that is no suite fails inside, as before)
    with lock_folder(suite, "suite") if (suite / "manifest.json").is_file() else nullcontext():
        path = merge_into_suite(suite, records)
    sources = {"agreed": 0, "adjudicated": 0}
    for r in records:
        sources[r["source"]] += 1
    return path, sources


def _sheets_beside(adjudication: Path) -> list[Path]:
    """``sheet_<name>.csv`` beside the adjudication file for each annotator its header names."""
    from dimobench.review.adjudicate import annotators_of
    from dimobench.review.sheets import read_csv

    _, _, header = read_csv(adjudication, ("qa_id", "final_verdict", "sample_id"))
    paths = [adjudication.parent / f"sheet_{n}.csv" for n in annotators_of(header)]
    missing = [p for p in paths if not p.is_file()]
    if missing or len(paths) < 2:
        what = f"{missing[0].name} is not beside it" if missing else "its header names no annotators"
        raise InputError(f"the annotators' sheets are needed for the items they agreed on ({what}): pass "
                         "them after the adjudication file", adjudication)
    return paths
