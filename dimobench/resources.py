"""Find the packaged ``prompts/`` and ``data/`` directories in a wheel or in a source checkout."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path


@lru_cache(maxsize=8)
def resource_dir(name: str) -> Path:
    """Return the directory of a top-level resource (``"data"`` or ``"prompts"``).

    A built wheel carries them under ``dimobench/_resources/`` (hatch force-include); an editable install
    reads them from the checkout, one level above the package.
    """
    packaged = Path(str(resources.files("dimobench"))) / "_resources" / name
    if packaged.is_dir():
        return packaged
    source = Path(__file__).resolve().parent.parent / name
    if source.is_dir():
        return source
    raise FileNotFoundError(f"dimobench resource directory {name!r} is missing (looked in {packaged} and {source})")
