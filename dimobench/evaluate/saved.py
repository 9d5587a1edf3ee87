"""A finished evaluation read back from disk: its ``report.json`` and the ``answers-*.jsonl`` files it names.

``compare`` and the comparison page both start from here, so a malformed folder is refused the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dimobench.errors import InputError


def read_saved(report_path: str | Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """``(report, rows per system)`` of the evaluation at ``report_path`` (its ``report.json`` or its folder).

    Raises:
        InputError: no report, a report that is not dimobench's, a missing answers file, or a row without
            string ``suite`` and ``qa_id`` (with its file and line).
    """
    from dimobench.strictjson import jsonl, loads, read_text

    path = Path(report_path)
    path = path / "report.json" if path.is_dir() else path
    if not path.is_file():
        raise InputError("report.json not found", path)
    report = loads(read_text(path), path)
    named = report.get("config", {}).get("answers") if isinstance(report, dict) else None
    if not isinstance(named, dict):
        raise InputError("not a dimobench report (no config.answers)", path)
    answers: dict[str, list[dict[str, Any]]] = {}
    for system, name in named.items():
        rows_path = path.parent / str(name)
        if not rows_path.is_file():
            raise InputError(f"answers for {system!r} missing beside the report", rows_path)
        rows = []
        for line, r in jsonl(rows_path):
            if isinstance(r, InputError):
                raise r
            if not isinstance(r, dict) or not isinstance(r.get("suite"), str) or not isinstance(r.get("qa_id"), str):
                raise InputError("a row needs string suite and qa_id", rows_path, line)
            rows.append(r)
        answers[str(system)] = rows
    return report, answers
