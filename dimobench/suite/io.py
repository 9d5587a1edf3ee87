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

from dimobench import strictjson
from dimobench.errors import InputError

_UMASK = os.umask(0o022)
os.umask(_UMASK)


def dumps(obj: Any) -> str:
    """One canonical JSON line (UTF-8, field order kept); optional fields never set are left out.

    Strict JSON: a NaN or infinite float becomes ``null`` (the readers refuse ``NaN``).
    """
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json", exclude_unset=True)
    return json.dumps(strictjson.finite(obj), ensure_ascii=False, separators=(", ", ": "), allow_nan=False)


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


def read_text(path: Path) -> str:
    """A whole suite file as text: unreadable, not UTF-8 -> ``InputError`` ``file:line: not UTF-8 (...)``."""
    return strictjson.read_text(path)


def read_json(path: Path) -> Any:
    """A whole strict-JSON file (``manifest.json``, state records): every failure is an ``InputError``."""
    return strictjson.loads(read_text(path), path)


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, object)`` of a JSON Lines file of objects; the first bad line raises ``InputError``.

    Bad means unreadable, not UTF-8, not strict JSON (``NaN``, too deep, a huge integer) or not an object.
    """
    for n, value in strictjson.jsonl(path):
        if isinstance(value, InputError):
            raise value
        yield n, value


read_jsonl = iter_jsonl
"""The older name of :func:`iter_jsonl`."""


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
