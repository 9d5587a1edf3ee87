"""The folder of exported ONNX models: named by what they were built from, written atomically, checked on read.

A cached file is ``<key>.onnx`` in :func:`cache_folder`: the sha256 of the model's bytes in hex and a newline, then
the bytes. The key (:func:`cache_key`) digests the files the export was built from and the versions of everything
that traces, exports or quantises it, so a changed model or library never reads an older file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

CACHE_ENV = "PRECOMEM_ONNX_CACHE"
"""Environment variable naming the folder for exported models (``off``: none, exports stay in memory)."""
CACHE_FORMAT = 2
"""Bumped when what a cached file holds or how it is exported changes, so that older files are never read."""
OPSET = 17
"""The ONNX opset exports are written in."""
HEADER = 65
"""A cached file starts with the sha256 of the rest, in hex, and a newline: a file damaged in any byte is exported
again, not only one ONNX Runtime refuses."""


def cache_folder() -> Path | None:
    """Where exports are kept, or None when ``PRECOMEM_ONNX_CACHE`` is ``off`` (or empty)."""
    env = os.environ.get(CACHE_ENV)
    if env is not None:
        env = env.strip()
        return None if env.lower() in ("", "off", "0", "none") else Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError):  # no home to find (a bare container user): exports stay in memory
            return None
    return Path(base) / "precomem" / "onnx"


def _file_digest(path: Path) -> str:
    import hashlib

    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in ("torch", "transformers", "sentence-transformers", "onnx", "onnxruntime"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "-"
    return out


def cache_key(output: str, quantized: bool, files: Sequence[Path]) -> str:
    """Digest naming an export: the bytes of the files it is built from (weights, config, card), the output, int8
    or not, the opset, and the versions of everything that traces, exports or quantises it."""
    import hashlib
    import json

    text = json.dumps({"format": CACHE_FORMAT, "opset": OPSET, "output": output, "int8": quantized,
                       "versions": _versions(), "files": [_file_digest(f) for f in files]}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def read_cached(folder: Path | None, key: str) -> bytes | None:
    """The cached export, or None when there is none or its bytes do not match the digest it was written with."""
    import hashlib

    if folder is None:
        return None
    try:
        data = (folder / f"{key}.onnx").read_bytes()
    except OSError:
        return None
    head, model = data[:HEADER], data[HEADER:]
    return model if head == hashlib.sha256(model).hexdigest().encode() + b"\n" else None


def write_cached(folder: Path | None, key: str, model: bytes) -> None:
    """Write atomically (a temporary file in the folder, flushed to disk, then a rename): a reader sees the whole
    file or none, and two processes exporting at once each rename a whole file. A folder we cannot write is no
    error (the export stays in memory); temporary files a killed writer left over an hour ago are removed."""
    import hashlib
    import time

    if folder is None:
        return
    tmp: Path | None = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob(".*.tmp"):
            if time.time() - old.stat().st_mtime > 3600:
                old.unlink(missing_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{key}-", suffix=".tmp", delete=False) as fh:
            tmp = Path(fh.name)
            fh.write(hashlib.sha256(model).hexdigest().encode() + b"\n")
            fh.write(model)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # a cache others on the machine may read, as any other user cache file
        os.replace(tmp, folder / f"{key}.onnx")
    except OSError:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
