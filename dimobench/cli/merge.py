"""``dimobench merge``: join the shard folders of one ``evaluate --shard i/n`` split into one evaluation."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def merge(
    shards: Annotated[list[Path], typer.Argument(help="The n shard folders (evaluate --shard 1/n ... n/n).")],
    out: Annotated[Path, typer.Option(help="Directory for the merged answers, report.json, report.md and plots.",
                                      envvar="DIMOBENCH_MERGE_OUT")],
    force: Annotated[bool, typer.Option(help="Replace an earlier evaluation in --out.")] = False,
) -> None:
    """Check the shards belong together (same settings and suites, each index once, all finished), then write
    the report a single run would."""
    from dimobench.api import merge_shards as run_merge
    from dimobench.errors import DimobenchError

    try:
        report = run_merge(shards, out, force=force)
    except DimobenchError as exc:
        typer.echo(f"dimobench: error: {exc}", err=True)
        raise typer.Exit(2) from None
    for name, fig in report.systems.items():
        shown = "-" if fig.overall is None else f"{100 * fig.overall:.1f}%"
        typer.echo(f"{name:28s} overall {shown}")
    typer.echo(f"merged {len(shards)} shard(s) into {out}/report.json, report.md, report.html, answers-*.jsonl")
