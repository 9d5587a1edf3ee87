"""Fill blank review sheets with chosen labels, the way a spreadsheet would save them."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from dimobench.review.sheets import CRITERIA


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as fh:
        return list(csv.DictReader(fh))


def write_rows(path: Path, rows: Sequence[dict[str, str]], bom: bool = True) -> None:
    with path.open("w", encoding="utf-8-sig" if bom else "utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def fill(src: Path, dst: Path, verdicts: Sequence[str], criteria: Sequence[str] | None = None,
         bom: bool = True) -> list[dict[str, str]]:
    """Copy a blank sheet to ``dst`` with one verdict per row and the same label on every criterion."""
    rows = read_rows(src)
    assert len(rows) == len(verdicts)
    for i, (row, v) in enumerate(zip(rows, verdicts, strict=True)):
        row["verdict"] = v
        for c in CRITERIA:
            row[c] = criteria[i] if criteria else "ACCEPT"
    write_rows(dst, rows, bom=bom)
    return rows
