"""Output directories: refuse to clobber user data, wipe only what dimobench itself wrote."""

from __future__ import annotations

import shutil
from pathlib import Path

from dimobench.errors import ConfigError

MARKERS = ("manifest.json", ".dimobench")
"""A directory holding one of these was written by dimobench and may be replaced with --force."""


def prepare_out(out: Path, force: bool, resume: bool | None = None, markers: tuple[str, ...] = MARKERS) -> None:
    """Create ``out``; a non-empty one is an error unless ``resume`` (kept) or ``force`` (wiped).

    ``resume=None`` means the command has no ``--resume``; the error message then does not offer it.

    ``force`` only wipes a directory that holds one of ``markers``, so a mistyped ``--out ~`` never deletes a
    user's files.
    """
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if force:
            if not any((out / m).exists() for m in markers):
                raise ConfigError(f"--out {out} is not empty and was not written by dimobench; refusing to delete it")
            shutil.rmtree(out)
        elif not resume:
            hint = "use --force to overwrite" + (" or --resume" if resume is not None else "")
            raise ConfigError(f"--out {out} exists and is not empty ({hint})")
    out.mkdir(parents=True, exist_ok=True)
