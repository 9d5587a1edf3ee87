"""Importers: third-party memory benchmarks converted to the suite format (DESIGN.md section 9).

Each importer module exposes ``NAME``, ``LICENCE``, ``CITATION`` and ``load(path, ...) -> Imported``; they are
loaded lazily from :data:`IMPORTERS` so importing this package stays cheap.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

from dimobench.errors import ConfigError

IMPORTERS: dict[str, str] = {
    "locomo": "dimobench.importers.locomo",
    "longmemeval": "dimobench.importers.longmemeval",
    "personamem": "dimobench.importers.personamem",
    "amemgym": "dimobench.importers.amemgym",
}
"""Importer name -> module path."""

__all__ = ["IMPORTERS", "get_importer", "import_benchmark"]


def get_importer(name: str) -> ModuleType:
    """The importer module called ``name``; an unknown name is a ``ConfigError`` listing the known ones."""
    if name not in IMPORTERS:
        raise ConfigError(f"unknown benchmark {name!r} (choose from {', '.join(IMPORTERS)})")
    return importlib.import_module(IMPORTERS[name])


def import_benchmark(name: str, path: str | Path, out: str | Path, *, force: bool = False,
                     **options: Any) -> Any:
    """Convert the benchmark file at ``path`` into a suite in ``out`` and return its manifest.

    The whole input is parsed before ``out`` is touched: malformed input raises ``InputError`` (file, line or
    field) and a non-empty ``out`` without ``force`` raises ``ConfigError``, with nothing written.
    ``options`` go to the importer's ``load`` (PersonaMem: ``contexts=PATH``).
    """
    from dimobench.importers.common import write_imported

    imported = get_importer(name).load(Path(path), **options)
    return write_imported(imported, Path(out), force=force)
