"""Strict JSON: the one parser for every file a user hands us, and the one writer for reports.

``loads`` is ``json.loads`` that a hostile file cannot crash or bend: ``NaN``/``Infinity`` are refused (they are
not JSON, and a score of NaN would publish silently), nesting is bounded (a 100,000-deep ``[[[`` would otherwise
raise ``RecursionError``), integers are bounded (a 5,000-digit one would raise ``ValueError``), floats that
overflow to infinity are refused, and strings holding a lone surrogate (``"\\ud800"``, which cannot be written
back as UTF-8) are refused. Every refusal is an ``InputError`` naming the file and line.

``dumps`` writes strict JSON: non-finite floats become ``null`` and ``allow_nan=False`` guarantees nothing else
slips through. Use it for ``report.json``, answers files and anything else another program will parse.

``read_text`` reads a file's bytes and decodes them strictly as UTF-8 (one leading BOM allowed): an unreadable
file or a bad byte is an ``InputError`` (``file:line: not UTF-8 (byte 0xff at column 7)``), never a traceback.
``jsonl`` splits on ``"\\n"`` only (``str.splitlines`` would also split inside a string holding U+2028) and
yields each line's object or the located error, so a validator can go on after a bad line.

Imports only ``dimobench.errors`` (bottom layer), so every package may use it; ``dimobench.suite.io`` builds
the suite readers on these.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dimobench.errors import InputError

MAX_DEPTH = 64
"""Deepest nesting of arrays/objects accepted; real suite and benchmark files stay under 10."""
MAX_INT_DIGITS = 30
"""Longest integer accepted (sign excluded); ids, turns and indices are far shorter."""

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_EMPTY_PAIR = re.compile(r"\[\]|\{\}")
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}\n]', re.DOTALL)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class _Refused(ValueError):
    """Raised inside a parse hook; ``token`` helps find the line of a multi-line document."""

    def __init__(self, message: str, token: str) -> None:
        super().__init__(message)
        self.message, self.token = message, token


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not valid JSON (only finite numbers are)", name)


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"integer with {len(text.lstrip('-'))} digits is too large (at most {MAX_INT_DIGITS})",
                       text)
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"number {text[:40]} is out of range", text)
    return value


def _too_deep(text: str) -> bool:
    """True if valid JSON ``text`` nests deeper than ``MAX_DEPTH``; each round strips one innermost level."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    for _ in range(MAX_DEPTH):
        if not brackets:
            return False
        brackets = _EMPTY_PAIR.sub("", brackets)
    return bool(brackets)


def _deep_line(text: str) -> int:
    """Line where nesting first passes ``MAX_DEPTH`` (error path only, so a Python loop is fine)."""
    depth, line = 0, 1
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok == "\n":
            line += 1
        elif tok in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return line
        elif tok in "]}":
            depth -= 1
        else:
            line += tok.count("\n")
    return line


def _has_lone_surrogate(obj: Any) -> bool:
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _line_of(text: str, token: str, line: int | None) -> int | None:
    if line is not None or "\n" not in text:
        return line if line is not None else 1
    pos = text.find(token)
    return text.count("\n", 0, pos) + 1 if pos >= 0 else None


def loads(text: str, path: str | Path | None = None, line: int | None = None) -> Any:
    """Parse strict JSON ``text`` read from ``path`` (at ``line`` for one JSON Lines line, else line 1 on).

    Raises ``InputError`` (``file:line: message``) for anything that is not strict, bounded JSON.
    """
    try:
        obj = json.loads(text, parse_constant=_constant, parse_int=_int, parse_float=_float)
    except json.JSONDecodeError as exc:
        where = line if line is not None else exc.lineno
        raise InputError(f"not valid JSON ({exc.msg} at column {exc.colno})", path, where) from None
    except _Refused as exc:
        raise InputError(exc.message, path, _line_of(text, exc.token, line)) from None
    except RecursionError:
        raise InputError(f"JSON nested deeper than {MAX_DEPTH} levels", path, line or _deep_line(text)) from None
    except (ValueError, TypeError, OverflowError) as exc:  # json.loads of a str should not, but never a traceback
        raise InputError(f"not valid JSON ({exc})", path, line) from None
    if ("[" in text or "{" in text) and _too_deep(text):
        raise InputError(f"JSON nested deeper than {MAX_DEPTH} levels", path, line or _deep_line(text))
    found = _SURROGATE_ESCAPE.search(text)
    if found and _has_lone_surrogate(obj):
        raise InputError("a string holds a lone surrogate escape (\\ud800..\\udfff), not valid UTF-8 text",
                         path, line or text.count("\n", 0, found.start()) + 1)
    return obj


def read_bytes(path: str | Path) -> bytes:
    """The bytes of ``path``; a missing, unreadable or non-regular file is an ``InputError`` naming it."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", path) from None
    except PermissionError:
        raise InputError("cannot read the file (permission denied)", path) from None
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror or exc})", path) from None


def decode(data: bytes, path: str | Path | None = None, first_line: int = 1) -> str:
    """``data`` as UTF-8 text (one leading BOM dropped); a bad byte is an ``InputError`` with line and column."""
    if first_line == 1 and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = first_line + data.count(b"\n", 0, exc.start)
        column = len(data[line_start:exc.start].decode("utf-8", "replace")) + 1
        raise InputError(f"not UTF-8 (byte 0x{data[exc.start]:02x} at column {column})", path, line) from None


def read_text(path: str | Path) -> str:
    """The whole of ``path`` as UTF-8 text; see :func:`read_bytes` and :func:`decode` for the errors."""
    return decode(read_bytes(path), path)


def jsonl(path: str | Path, objects: bool = True) -> Iterator[tuple[int, Any]]:
    """Yield ``(line number, parsed value or InputError)`` for each non-blank line of a JSON Lines file.

    Lines are split on ``"\\n"`` only; a ``\\r`` before it is dropped. With ``objects`` a line that is not a
    JSON object is an error too. Errors are yielded, not raised, so callers may report every bad line;
    an unreadable file raises ``InputError`` at once.
    """
    data = read_bytes(path)
    for n, raw in enumerate(data.split(b"\n"), start=1):
        try:
            text = decode(raw, path, n).removesuffix("\r")
            if not text.strip():
                continue
            value = loads(text, path, n)
        except InputError as exc:
            yield n, exc
            continue
        if objects and not isinstance(value, dict):
            yield n, InputError(f"expected a JSON object, got {_kind(value)}", path, n)
        else:
            yield n, value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def finite(obj: Any) -> Any:
    """``obj`` with every NaN or infinite float (in dicts, lists and tuples) replaced by ``None``."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    return obj


def dumps(obj: Any, **kw: Any) -> str:
    """``json.dumps`` that always writes strict JSON: non-finite floats become ``null``; ``kw`` go to json.dumps."""
    kw["allow_nan"] = False
    return json.dumps(finite(obj), **kw)
