"""The ``dimobench`` command: a thin typer layer over :mod:`dimobench.api`.

Library modules are imported inside the commands so ``dimobench --help`` stays fast. Every
``DimobenchError`` becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Build, verify and run drift benchmarks for long-term dialogue memory.")


def _fail(message: str, code: int = 2) -> None:
    typer.echo(f"dimobench: error: {message}", err=True)
    raise typer.Exit(code)


@app.command()
def generate(
    out: Annotated[Path, typer.Option(help="Directory to write the suite into.", envvar="DIMOBENCH_OUT")],
    preset: Annotated[Optional[str], typer.Option(help="dimobench (5 x 350 turns, 1 drift, 1,000 QA) or xl.",
                                                  envvar="DIMOBENCH_PRESET")] = None,
    turns: Annotated[Optional[int], typer.Option(help="Turns per persona [default: 350].")] = None,
    drifts: Annotated[Optional[int], typer.Option(help="Drifts per persona [default: 1].")] = None,
    personas: Annotated[Optional[int], typer.Option(help="Personas [default: 5].")] = None,
    qa: Annotated[Optional[int], typer.Option(help="Questions per persona [default: round(0.4 x turns)].")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Random seed [default: 0].", envvar="DIMOBENCH_SEED")] = None,
    traits: Annotated[Optional[int], typer.Option(help="Traits per persona, 4-8 [default: 6].")] = None,
    transition_frac: Annotated[Optional[float], typer.Option(help="Transition length / drift segment [0.12].")] = None,
    cue_rate: Annotated[Optional[float], typer.Option(help="Share of cue turns [0.4].")] = None,
    confounder_rate: Annotated[Optional[float], typer.Option(help="Share of confounder turns [0.16].")] = None,
    force: Annotated[bool, typer.Option(help="Overwrite an existing suite in --out.")] = False,
    resume: Annotated[bool, typer.Option(help="Keep finished stages whose fingerprint matches.")] = False,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Run stage 6 (verification).")] = True,
) -> None:
    """Generate a drift suite (offline by default: deterministic, no network, no key)."""
    from dimobench.errors import DimobenchError

    try:
        _generate(out, preset, dict(turns=turns, drifts=drifts, personas=personas, qa=qa, seed=seed, traits=traits,
                                    transition_frac=transition_frac, cue_rate=cue_rate,
                                    confounder_rate=confounder_rate), force, resume, verify)
    except DimobenchError as exc:
        _fail(str(exc))


def _generate(out: Path, preset: str | None, overrides: dict[str, object], force: bool, resume: bool,
              verify: bool) -> None:
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from dimobench.api import generate_suite
    from dimobench.config import make_config
    from dimobench.pipeline import STAGES

    cfg = make_config(preset, **overrides).check()
    console = Console(stderr=True)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                  transient=True) as bar:
        task = bar.add_task("generating", total=len(STAGES))

        def progress(stage: str, what: str) -> None:
            bar.update(task, description=f"stage {stage}: {what}")
            if what != "running":
                bar.advance(task)

        manifest = generate_suite(cfg, out, force=force, resume=resume, progress=progress)
    from dimobench.report_cli import print_generate_summary

    print_generate_summary(console, out, manifest, verified=False)
    if verify:
        console.print("[dim]stage 6 (verification) is not available yet: run without it (same as --no-verify)[/]")


@app.command()
def validate(suite: Annotated[Path, typer.Argument(help="Suite directory.")]) -> None:
    """Check a suite (types, ids, references, ordering, hashes); every problem as file:line: field: message."""
    from dimobench.validate import validate_suite

    problems = validate_suite(suite)
    for p in problems:
        typer.echo(f"{suite}/{p}", err=True)
    if problems:
        _fail(f"{len(problems)} problem(s) in {suite}")
    typer.echo(f"{suite}: valid")


@app.command()
def schema(out: Annotated[Optional[Path], typer.Option(help="Write one .schema.json per record here.")] = None
           ) -> None:
    """Print (or write) the JSON Schema of every suite record."""
    import json

    from dimobench.schema import RECORD_FILES, Manifest

    schemas = {"manifest.json": Manifest.model_json_schema(),
               **{name: model.model_json_schema() for name, model in RECORD_FILES.items()}}
    if out is None:
        typer.echo(json.dumps(schemas, indent=2))
        return
    from dimobench.jsonl import atomic_write_text

    for name, sch in schemas.items():
        atomic_write_text(out / f"{name.split('.')[0]}.schema.json", json.dumps(sch, indent=2) + "\n")
    typer.echo(f"wrote {len(schemas)} schemas to {out}")


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        typer.echo("dimobench: interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
