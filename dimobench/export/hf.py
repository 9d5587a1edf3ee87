"""``dimobench export --format hf``: a suite as a Hugging Face dataset folder (Parquet per record file + card).

Layout, one config per non-empty record file of the suite (``personas``, ``schedules``, ``dialogues``, ``qa``,
``verdicts``), each with a single ``test`` split, as ``datasets`` reads a multi-config repository::

    README.md                 dataset card: YAML front matter (configs, dataset_info, licence) + description
    suite_manifest.json       the suite's manifest.json (config, backends, sha256 of the JSONL files)
    <config>/test.parquet

Same suite, same bytes: rows keep the suite's order, the schema is derived deterministically (see
:mod:`dimobench.export.arrow`), and nothing time- or host-dependent goes into the files.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from dimobench.errors import ConfigError, InputError
from dimobench.suite.card import canary
from dimobench.suite.io import atomic_write_text
from dimobench.suite.load import Suite, load_suite
from dimobench.suite.outdir import claim_out
from dimobench.suite.schema import RECORD_FILES
from dimobench.suite.validate import validate_suite

if TYPE_CHECKING:
    import pyarrow as pa

FORMATS = ("hf",)
"""Export formats ``export_suite`` knows."""

SPLIT = "test"
"""The one split of every config: a benchmark is evaluation data, not training data."""

ROW_GROUP = 10_000
"""Rows per Parquet row group: small enough for the Hub's viewer to page through large dialogue files."""


class ConfigInfo(BaseModel):
    """One exported record file: its config name, Parquet path and row count."""

    name: str
    """Config name: the record file's stem (``qa`` for ``qa.jsonl``)."""
    path: str
    """Parquet file, relative to the export folder."""
    rows: int
    num_bytes: int
    """Size of the rows in memory (Arrow), which ``datasets`` calls a split's ``num_bytes``."""
    parquet_bytes: int
    """Size of the Parquet file (the card's ``download_size``)."""
    features: list[dict[str, object]]
    """``dataset_info.features`` of the card (the YAML form ``datasets`` writes)."""
    json_columns: list[str]
    """Top-level columns stored as JSON text because their values have no common type."""


class ExportResult(BaseModel):
    """What :func:`export_suite` wrote."""

    format: str
    """Export format (``hf``)."""
    out: Path
    """The export folder."""
    files: list[str]
    """Every file written, relative to ``out``, sorted."""
    rows: dict[str, int]
    """Config name -> row count (the number of records of that JSONL file)."""
    canary: str
    """The suite's canary string, repeated in the card and every Parquet file's metadata."""


def export_suite(suite: str | Path, out: str | Path, format: str = "hf", force: bool = False) -> ExportResult:
    """Export the suite at ``suite`` into ``out`` in ``format`` (only ``hf`` for now).

    Args:
        suite: The suite folder.
        out: Folder to write; empty, absent, or an earlier export (replaced only with ``force``).
        format: ``hf``: a Hugging Face dataset folder (Parquet per record file and a dataset card).
        force: Replace an earlier export in ``out``.

    Returns:
        The files written and the row count of every config.

    Raises:
        ConfigError: An unknown ``format``, or an ``out`` that is not an empty folder or an earlier export.
        InputError: ``suite`` is not a valid, complete suite (file, line and field of the first problem).
    """
    if format not in FORMATS:
        raise ConfigError(f"unknown export format {format!r} (known: {', '.join(FORMATS)})")
    loaded = _load_checked(Path(suite))
    from dimobench.export.arrow import JSON_MARK, features, records_table
    from dimobench.export.hfcard import render_hf_card

    code = canary(loaded.manifest)
    meta = {"dimobench": json.dumps({"format": loaded.manifest.format, "format_version": loaded.manifest.format_version,
                                     "dimobench_version": loaded.manifest.dimobench_version, "canary": code},
                                    sort_keys=True)}
    out = Path(out)
    configs: list[ConfigInfo] = []
    empty: list[str] = []
    with claim_out(out, "export", force=force):
        for name, model in RECORD_FILES.items():
            if not (loaded.path / name).exists():
                continue
            config = name.removesuffix(".jsonl")
            records = getattr(loaded, config)
            if not records:  # an imported suite's empty plan: `datasets` cannot read a Parquet file of no rows
                empty.append(name)
                continue
            table = records_table(model, records, meta)
            rel = f"{config}/{SPLIT}.parquet"
            _write_parquet(table, out / rel)
            configs.append(ConfigInfo(name=config, path=rel, rows=table.num_rows, num_bytes=table.nbytes,
                                      parquet_bytes=(out / rel).stat().st_size, features=features(table.schema),
                                      json_columns=[f.name for f in table.schema if f.metadata == JSON_MARK]))
        manifest_text = json.dumps(loaded.manifest.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
        atomic_write_text(out / "suite_manifest.json", manifest_text)
        atomic_write_text(out / "README.md", render_hf_card(loaded.manifest, configs, SPLIT, empty))
    files = sorted([c.path for c in configs] + ["README.md", "suite_manifest.json"])
    return ExportResult(format=format, out=out, files=files, rows={c.name: c.rows for c in configs}, canary=code)


def _load_checked(root: Path) -> Suite:
    """The suite at ``root``, refused unless it loads, validates and is finished: a published copy of a broken
    or half-made suite would outlive the fix."""
    loaded = load_suite(root)  # a malformed line fails here, with its file, line and field
    if loaded.manifest.status == "incomplete":
        raise InputError("the suite is incomplete (a stage it was asked for has not finished); finish it with "
                         "dimobench generate --resume before exporting", root / "manifest.json", None, "status")
    problems = validate_suite(root)
    if problems:
        raise InputError(f"{problems[0]} ({len(problems)} problem(s); dimobench validate {root} lists them)", root)
    return loaded


def _write_parquet(table: pa.Table, path: Path) -> None:
    """Write ``table`` to a temp file beside ``path``, then move it into place (no half-written Parquet)."""
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp, compression="zstd", row_group_size=ROW_GROUP)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; an export is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

