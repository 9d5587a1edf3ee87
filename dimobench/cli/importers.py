"""``dimobench import``: convert LoCoMo, LongMemEval, PersonaMem or AMemGym data into a suite.

Only typer is imported at module level; the importers load inside the command, so registering it keeps
``dimobench --help`` fast.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer


class Source(str, Enum):
    """The benchmarks ``dimobench import`` reads."""

    locomo = "locomo"
    longmemeval = "longmemeval"
    personamem = "personamem"
    amemgym = "amemgym"


def import_suite(
    source: Annotated[Source, typer.Argument(help="Benchmark format of PATH.")],
    path: Annotated[Path, typer.Argument(help="Source file (PersonaMem: the questions CSV).")],
    out: Annotated[Path, typer.Option(help="Directory to write the suite into.", envvar="DIMOBENCH_OUT")],
    contexts: Annotated[Optional[Path], typer.Option(
        help="PersonaMem shared-context JSONL (default: shared_contexts_<size>.jsonl beside PATH).")] = None,
    force: Annotated[bool, typer.Option(help="Overwrite an existing suite in --out.")] = False,
) -> None:
    """Import a third-party benchmark as a suite (status "imported"; check it with dimobench validate)."""
    from dimobench.errors import ConfigError, DimobenchError

    try:
        if contexts is not None and source is not Source.personamem:
            raise ConfigError("--contexts is only for personamem")
        from dimobench.importers import import_benchmark

        options = {"contexts": contexts} if contexts is not None else {}
        manifest = import_benchmark(source.value, path, out, force=force, **options)
    except DimobenchError as exc:
        typer.echo(f"dimobench: error: {exc}", err=True)
        raise typer.Exit(2) from None
    c = manifest.counts
    typer.echo(f"{out}: imported {source.value} from {path.name}: {c['personas']} personas, "
               f"{c['turns']} turns, {c['qa']} questions, {c['dropped_evidence']} evidence id(s) dropped",
               err=True)
