"""``dimobench export``: write a suite in a format other tools load (``hf``: a Hugging Face dataset folder).

Only typer is imported at module level; the exporter (and pyarrow) loads inside the command, so registering
it keeps ``dimobench --help`` fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def export(
    suite: Annotated[Path, typer.Argument(help="Suite directory.")],
    out: Annotated[Path, typer.Option(help="Folder to write (empty, or an earlier export with --force).")],
    format: Annotated[str, typer.Option("--format", help="hf: Parquet per record file + a Hugging Face dataset "
                                                         "card (load_dataset reads the folder).")] = "hf",
    force: Annotated[bool, typer.Option(help="Replace an earlier export in --out.")] = False,
) -> None:
    """Export a suite for publishing, e.g. as a Hugging Face dataset (Parquet + dataset card)."""
    from dimobench.api import export_suite
    from dimobench.errors import DimobenchError

    try:
        result = export_suite(suite, out, format=format, force=force)
    except DimobenchError as exc:
        typer.echo(f"dimobench: error: {exc}", err=True)
        raise typer.Exit(2) from None
    rows = ", ".join(f"{name} {n}" for name, n in result.rows.items())
    typer.echo(f"wrote {len(result.files)} files to {result.out} ({format}: {rows})")
