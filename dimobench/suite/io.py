"""Canonical JSON Lines: the same records always give the same bytes, written atomically."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

_UMASK = os.umask(0o022)
os.umask(_UMASK)


def dumps(obj: Any) -> str:
    """One canonical JSON line (UTF-8, field order kept); optional fields never set are left out."""
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json", exclude_unset=True)
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temp file in the same directory and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes 0600; suites are meant to be shared
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl(path: Path, records: Iterable[Any]) -> None:
    """Write records as JSON Lines atomically."""
    atomic_write_text(path, "".join(dumps(r) + "\n" for r in records))


def read_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, parsed)``; a line that is not JSON raises ``InputError`` naming file and line."""
    from dimobench.errors import InputError

    with path.open(encoding="utf-8-sig") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not valid JSON ({exc.msg} at column {exc.colno})", path, n) from None


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
