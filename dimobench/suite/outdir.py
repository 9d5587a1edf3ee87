"""Output folders: the one rule every writing command follows, and the lock that makes a run its folder's only writer.

A command writes only into a folder that is empty (or absent), or that dimobench itself wrote: recognised by the
marker ``.dimobench/owner.json`` whose content names dimobench and the kind of output, never by file names any
project may have (a web extension has its own ``manifest.json``). ``--force`` wipes only such a folder and only
one of the same kind (``generate --force`` never replaces an evaluation); ``--resume`` keeps it. Symlinks and
folders inside another dimobench output are refused, so a later ``--force`` on the outer folder cannot take
them with it. An exclusive ``flock`` on ``.dimobench/lock`` is held for the whole run: a second writer fails at
once with one line instead of silently replacing the first one's files.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dimobench.errors import ConfigError, InputError
from dimobench.strictjson import loads, read_text

STATE_DIR = ".dimobench"
"""The hidden folder of every output dimobench writes: its marker, its lock and resumable run state."""

OWNER = "owner.json"
LOCK = "lock"
WRITER = "dimobench"

KINDS = {"generate": "suite", "import": "suite", "evaluate": "evaluation", "review sample": "review sample",
         "audit": "audit", "verify --calibrate": "calibration copy", "schema": "schema export", "compare": "comparison",
         "export": "dataset export"}
"""Writing command -> the kind of output it leaves; ``--force`` replaces only an output of the same kind."""


def owner(folder: Path) -> dict[str, str] | None:
    """The marker of a folder dimobench wrote (``{"written_by", "command", "kind"}``), or None."""
    marker = folder / STATE_DIR / OWNER
    try:
        if not marker.is_file() or marker.stat().st_size > 4096:
            return None
        data = loads(read_text(marker), marker)
    except (OSError, InputError):
        return None
    if not isinstance(data, dict) or data.get("written_by") != WRITER or data.get("kind") not in KINDS.values():
        return None
    return {k: str(v) for k, v in data.items()}


def _is_suite(folder: Path) -> bool:
    """A suite dimobench did not mark (hand-written, older): a ``manifest.json`` of the dimobench suite format."""
    manifest = folder / "manifest.json"
    try:
        if not manifest.is_file() or manifest.stat().st_size > 1 << 20:
            return False
        data = loads(read_text(manifest), manifest)
    except (OSError, InputError):
        return False
    return isinstance(data, dict) and data.get("format") == "dimobench-suite"


def _check_place(out: Path) -> None:
    if out.is_symlink():
        raise ConfigError(f"--out {out} is a symlink; give the folder it points to")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} exists and is not a directory")
    for parent in out.absolute().parents:
        marked = owner(parent)
        if marked is not None or _is_suite(parent):
            what = f"a dimobench {marked['kind']}" if marked else "a dimobench suite"
            raise ConfigError(f"--out {out} is inside {parent}, {what}; choose a folder outside it")


def _contents(out: Path) -> list[Path]:
    """What is in ``out`` besides the lock file (a run that failed to start may leave only that)."""
    if not out.is_dir():
        return []
    items = []
    for p in out.iterdir():
        if p.name == STATE_DIR and p.is_dir() and not p.is_symlink():
            items += [q for q in p.iterdir() if q.name != LOCK]
        else:
            items.append(p)
    return items


def _wipe(out: Path) -> None:
    """Remove everything in ``out`` but the lock file this run holds."""
    for p in out.iterdir():
        if p.name == STATE_DIR and p.is_dir() and not p.is_symlink():
            for q in p.iterdir():
                if q.name != LOCK:
                    _remove(q)
        else:
            _remove(p)


def _remove(path: Path) -> None:
    """Delete a file, a link (never what it points to) or a whole folder."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


@contextmanager
def lock_folder(folder: Path, what: str = "--out") -> Iterator[None]:
    """Hold the exclusive lock of ``folder`` (which must exist) until the block ends; busy: ``ConfigError`` at once."""
    state = folder / STATE_DIR
    try:
        state.mkdir(exist_ok=True)
        fd = os.open(state / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ConfigError(f"cannot write {what} {folder}: {exc.strerror}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            raise ConfigError(f"{what} {folder} is in use by another dimobench run"
                              f"{f' (pid {holder})' if holder.isdigit() else ''}; wait for it to end or choose "
                              f"another folder") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock


@contextmanager
def claim_out(out: Path, command: str, force: bool = False, resume: bool | None = None) -> Iterator[Path]:
    """Make ``out`` this run's folder for the whole ``with`` block: checked, locked, wiped or kept, marked.

    ``resume=None`` means the command has no ``--resume``; the error message then does not offer it. A folder
    that is not empty and was not written by dimobench (see :func:`owner`) is refused whatever the flags, and
    nothing in it changes.
    """
    kind = KINDS[command]
    out = Path(out)
    _check_place(out)
    if _contents(out) and owner(out) is None:  # refused before anything is created in it
        _check_ours(out, kind, force, resume)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create --out {out}: {exc.strerror}") from None
    with lock_folder(out):
        if _contents(out):  # checked under the lock, so a running writer is reported as that, not as "not empty"
            _check_ours(out, kind, force, resume)
            if force:
                _wipe(out)
        marker = out / STATE_DIR / OWNER
        if owner(out) is None:
            text = json.dumps({"written_by": WRITER, "command": command, "kind": kind}) + "\n"
            from dimobench.suite.io import atomic_write_text

            atomic_write_text(marker, text)
        yield out


def _check_ours(out: Path, kind: str, force: bool, resume: bool | None) -> None:
    marked = owner(out)
    if marked is None:
        raise ConfigError(f"--out {out} is not empty and was not written by dimobench (no {STATE_DIR}/{OWNER}); "
                          f"refusing to touch it: choose an empty folder")
    if marked["kind"] != kind:
        raise ConfigError(f"--out {out} holds a dimobench {marked['kind']}, not a {kind}; choose another folder")
    if not force and not resume:
        hint = "use --force to replace it" + (" or --resume to continue it" if resume is not None else "")
        raise ConfigError(f"--out {out} exists and is not empty ({hint})")
