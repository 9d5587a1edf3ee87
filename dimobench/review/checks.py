"""Load a set of filled-in sheets and check they belong together (same sample, same rows).

The sample comes from ``sample.jsonl`` (beside the first sheet, or given); without it the first sheet is the
reference. Each problem is one ``InputError`` naming the sheet, the line and the column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dimobench.errors import InputError
from dimobench.review.sampling import sample_id_of
from dimobench.review.sheets import Sheet, read_sample, read_sheet


@dataclass
class ReviewSet:
    """Sheets that passed every check, with the sample they share."""

    sheets: list[Sheet]
    sample_id: str
    qa_ids: list[str]
    """Items in sample order."""
    strata: dict[str, str]
    calibration: set[str]

    @property
    def names(self) -> list[str]:
        """Annotator names, in the order the sheets were given."""
        return [s.name for s in self.sheets]


def _few(ids: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(list(ids)[:limit])
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > limit else "")


def _check_rows(sheet: Sheet, sample_id: str, expected: list[str], reference: str) -> None:
    if sheet.sample_id is not None and sheet.sample_id != sample_id:
        line = min(sheet.lines.values())
        raise InputError(f"sheet is from sample {sheet.sample_id} but {reference} is from sample {sample_id} "
                         "(different qa_id sets; score sheets of one sample together)", sheet.path, line,
                         "sample_id")
    known = set(expected)
    extra = [q for q in sheet.lines if q not in known]
    if extra:
        raise InputError(f"{extra[0]} is not in sample {sample_id} ({reference})", sheet.path,
                         sheet.lines[extra[0]], "qa_id")
    missing = [q for q in expected if q not in sheet.labels]
    if missing:
        raise InputError(f"{len(missing)} row(s) of sample {sample_id} missing: {_few(missing)}", sheet.path,
                         sheet.last_line, "qa_id")


def load_sheets(paths: Sequence[Path], sample_path: Path | None = None) -> ReviewSet:
    """Read sheets and check them: two or more, distinct files, same sample, no missing or extra rows.

    Args:
        paths: the filled-in sheets.
        sample_path: ``sample.jsonl`` of the sample; default: beside the first sheet, if there.

    Raises:
        InputError: the first problem found, located in its sheet.
    """
    if len(paths) < 2:
        raise InputError("need at least two sheets to measure agreement", paths[0] if paths else None)
    resolved = [p.resolve() for p in paths]
    for i, p in enumerate(resolved):
        if p in resolved[:i]:
            raise InputError("the same sheet is given twice", paths[i])
    sheets = [read_sheet(Path(p)) for p in paths]
    seen: dict[str, int] = {}
    for s in sheets:
        seen[s.name] = seen.get(s.name, 0) + 1
        if seen[s.name] > 1:
            s.name = f"{s.name}{seen[s.name]}"
    if sample_path is None and (Path(paths[0]).parent / "sample.jsonl").is_file():
        sample_path = Path(paths[0]).parent / "sample.jsonl"
    if sample_path is not None:
        sample_id, rows = read_sample(sample_path)
        expected = [str(r["qa_id"]) for r in rows]
        strata = {str(r["qa_id"]): str(r.get("stratum") or "all") for r in rows}
        calibration = {str(r["qa_id"]) for r in rows if r.get("calibration")}
        reference = str(sample_path)
    else:
        first = max(sheets, key=lambda s: len(s.lines))  # so a short sheet reads as missing rows
        sample_id = first.sample_id or sample_id_of([])
        expected, strata, calibration = list(first.lines), dict(first.strata), set(first.calibration)
        reference = str(first.path)
    for s in sheets:
        _check_rows(s, sample_id, expected, reference)
    if expected and sample_id_of(expected) != sample_id:
        raise InputError(f"the qa_ids do not make up sample {sample_id} (rows were removed or added in every "
                         "sheet, or sample_id was edited)", sheets[0].path, sheets[0].last_line, "qa_id")
    return ReviewSet(sheets, sample_id, expected, strata, calibration)
