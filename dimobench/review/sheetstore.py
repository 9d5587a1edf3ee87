"""One annotator's sheet as the web app sees it: the blind rows to show, and one cell saved at a time.

The store never keeps a copy of the labels: every read goes to the file, and every save reads it, changes one
cell and writes it back whole with :func:`dimobench.review.sheets.write_csv` (atomic, same escaping and BOM as
the CSV flow), all under a lock file, so two browser tabs, two servers, or a spreadsheet saved in between
cannot make a save undo another one. The file stays the sheet ``review score``, ``adjudicate`` and ``merge``
read, byte for byte the shape ``review sample`` wrote.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dimobench.errors import ConfigError, InputError
from dimobench.review.sheets import (
    FIELDS,
    INFO_COLUMNS,
    MAX_CELL,
    labels_for,
    normalise_label,
    read_csv,
    read_sheet,
    valid_annotator_name,
    write_csv,
)
from dimobench.suite.outdir import STATE_DIR

NOTE = "note"
REQUIRED: tuple[str, ...] = ("qa_id", "sample_id", *FIELDS)
"""The columns ``read_sheet`` needs; ``note`` is added on the first note saved if a hand-made sheet lacks it."""


@dataclass(frozen=True)
class Row:
    """One item of the sheet: the cells the annotator may see, their labels and note."""

    qa_id: str
    info: dict[str, str]
    """The sheet's own text of every ``INFO_COLUMNS`` cell: exactly what the CSV shows this annotator."""
    labels: dict[str, str | None]
    note: str

    @property
    def done(self) -> bool:
        """Every criterion and the verdict have a label (the note is optional)."""
        return all(self.labels[f] is not None for f in FIELDS)


def find_sheet(sample_dir: Path, annotator: str) -> Path:
    """``sample_dir/sheet_<annotator>.csv``, checked: a sample folder, a plain name, a sheet that exists.

    Raises:
        InputError: no such folder, a name that could be a path, or no sheet of that annotator (the message
            lists the annotators whose sheets are there).
    """
    if not sample_dir.is_dir():
        raise InputError("no such sample folder (give the --out folder of `dimobench review sample`)", sample_dir)
    if not valid_annotator_name(annotator):
        raise InputError(f"--annotator {annotator!r} is not an annotator name (letters, digits, - or _)",
                         sample_dir)
    path = sample_dir / f"sheet_{annotator}.csv"
    if path.is_symlink():  # the app writes only a file that is really in the sample folder
        raise InputError(f"{path.name} is a symlink; copy the sheet into the folder instead", sample_dir)
    if not path.is_file():
        here = sorted(p.stem[len("sheet_"):] for p in sample_dir.glob("sheet_*.csv") if p.is_file())
        known = f"annotators here: {', '.join(here)}" if here else "no sheet_*.csv here: is it a review sample?"
        raise InputError(f"no sheet for annotator {annotator!r} ({known})", sample_dir)
    return path


class SheetStore:
    """Reads and saves one sheet; thread-safe, and safe against other processes saving the same sheet."""

    def __init__(self, path: Path) -> None:
        """Open ``path`` and check it reads as a sheet (the first problem raises ``InputError``)."""
        self.path = path
        self._thread_lock = threading.Lock()
        read_sheet(path)  # fail at start, not at the first click, on a sheet `review score` would refuse

    @contextmanager
    def _locked(self) -> Iterator[None]:
        state = self.path.parent / STATE_DIR
        try:
            state.mkdir(exist_ok=True)
            fd = os.open(state / f"{self.path.stem}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ConfigError(f"cannot write beside {self.path}: {exc.strerror}") from None
        with self._thread_lock:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # blocking: saves are milliseconds, a queue is the right answer
                yield
            finally:
                os.close(fd)

    def rows(self) -> list[Row]:
        """The items in sheet order, read from the file now."""
        return self._read()[2]

    def _read(self) -> tuple[list[str], list[dict[str, str]], list[Row]]:
        raw, _, header = read_csv(self.path, REQUIRED)
        rows = []
        for line, cells in raw:
            labels = {f: normalise_label(cells.get(f, ""), f, self.path, line) for f in FIELDS}
            rows.append(Row(cells["qa_id"].strip(), {c: cells.get(c, "") for c in INFO_COLUMNS}, labels,
                            cells.get(NOTE, "")))
        return header, [cells for _, cells in raw], rows

    def save(self, qa_id: str, field: str, value: str | None) -> Row:
        """Set one label (``None`` or blank clears it) or the note of ``qa_id`` and write the sheet.

        Raises:
            InputError: an unknown item, column or label.
        """
        if field != NOTE and field not in FIELDS:
            raise InputError(f"unknown column {field!r} (use {', '.join(FIELDS)} or note)", self.path)
        text = (value or "").strip()
        if field == NOTE:
            text = (value or "")[:MAX_CELL]
        elif text:
            text = text.upper()
            if text not in labels_for(field):
                raise InputError(f"unknown label {value!r} (use {', '.join(labels_for(field))})", self.path,
                                 None, field)
        with self._locked():
            header, cells, rows = self._read()
            at = next((i for i, r in enumerate(rows) if r.qa_id == qa_id), None)
            if at is None:
                raise InputError(f"{qa_id!r} is not an item of this sheet", self.path, None, "qa_id")
            if field not in header:
                header.append(field)
            cells[at][field] = text
            write_csv(self.path, header, cells)
            return self._read()[2][at]
