"""The ``dimobench`` command: a thin typer layer over :mod:`dimobench.api`.

Library modules are imported inside the commands so ``dimobench --help`` stays fast. Every
``DimobenchError`` becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from dimobench.cli.options import (
    BaseUrl,
    BatchPoll,
    CacheDir,
    Concurrency,
    JsonMode,
    Timeout,
    at_least,
    time_budget,
)

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
    turns: Annotated[Optional[int], typer.Option(help="Turns per persona (default 350).")] = None,
    drifts: Annotated[Optional[int], typer.Option(help="Drifts per persona (default 1).")] = None,
    personas: Annotated[Optional[int], typer.Option(help="Personas (default 5).")] = None,
    qa: Annotated[Optional[int], typer.Option(help="Questions per persona (default round(0.4 x turns)).")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Random seed (default 0).", envvar="DIMOBENCH_SEED")] = None,
    traits: Annotated[Optional[int], typer.Option(help="Traits per persona, 4-8 (default 6).")] = None,
    transition_frac: Annotated[Optional[float], typer.Option(
        help="Transition length / drift segment (default 0.12).")] = None,
    cue_rate: Annotated[Optional[float], typer.Option(help="Share of cue turns (default 0.4).")] = None,
    confounder_rate: Annotated[Optional[float], typer.Option(help="Share of confounder turns (default 0.16).")] = None,
    force: Annotated[bool, typer.Option(help="Overwrite an existing suite in --out.")] = False,
    resume: Annotated[bool, typer.Option(help="Keep finished stages whose fingerprint matches.")] = False,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Run stage 6 (verification).")] = True,
    qa_rules: Annotated[Optional[str], typer.Option(
        help="v1 (default: the questions of earlier versions) or valid (grounded gold, no present-tense questions "
             "on a trait in transition, temporal only after a first change; README 'Suites that measure "
             "memory').")] = None,
    catalog: Annotated[Optional[str], typer.Option(
        help="The catalog to draw from: catalog-v2 (shipped: four states per trait, options sharing no word with "
             "their cues; docs/measurements.md 'Validity'), catalog-v3 (30 traits over 21 topics, composed cues, "
             "typed slots; "
             "docs/catalog.md) or a directory; recorded in the manifest, so verify, audit and the oracle read "
             "the suite against it (default: $DIMOBENCH_CATALOG, else the packaged one).",
        envvar="DIMOBENCH_CATALOG")] = None,
    audit: Annotated[bool, typer.Option("--audit/--no-audit", help="Attack the suite (dimobench audit) and put "
                                                                  "its validity card in the README.")] = True,
    generator: Annotated[Optional[str], typer.Option(
        help="offline, openai, openai/MODEL, gemini or gemini/MODEL (default models gpt-4o, gemini-2.5-pro).",
        envvar="DIMOBENCH_GENERATOR")] = None,
    verifier: Annotated[Optional[str], typer.Option(help="Backend for stage 6, like --generator (default offline).",
                                                    envvar="DIMOBENCH_VERIFIER")] = None,
    base_url: BaseUrl = None,
    cache_dir: CacheDir = None,
    concurrency: Concurrency = 8,
    workers: Annotated[Optional[int], typer.Option(
        help="Processes writing personas at once (default: one per core, for suites of 1,000 turns or more); any "
             "number gives the same bytes.", envvar="DIMOBENCH_WORKERS", callback=at_least("--workers", 1))] = None,
    dry_run: Annotated[bool, typer.Option(help="Print the LLM calls and estimated cost; call nothing.")] = False,
    batch: Annotated[bool, typer.Option(help="Send the openai generator's (and verifier's) calls through the "
                                             "OpenAI Batch API: half price, done within 24 h.",
                                        envvar="DIMOBENCH_BATCH")] = False,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="With --batch: wait for each batch, or exit once "
                                                                "it is submitted (--resume collects it).")] = True,
    batch_poll: BatchPoll = 30.0,
    timeout: Timeout = None,
    json_mode: JsonMode = "json_schema",
) -> None:
    """Generate a drift suite (offline by default: deterministic, no network, no key)."""
    from dimobench.backends.batch import BatchPending
    from dimobench.errors import DimobenchError

    if not wait and not batch:
        _fail("--no-wait only applies with --batch")
    if catalog:
        _use_catalog(catalog)
    try:
        with time_budget(timeout, "rerun with --resume", json_mode):
            code = _generate(out, preset, dict(turns=turns, drifts=drifts, personas=personas, qa=qa, seed=seed,
                                               traits=traits, transition_frac=transition_frac, cue_rate=cue_rate,
                                               confounder_rate=confounder_rate, generator=generator,
                                               verifier=verifier, qa_rules=qa_rules), force, resume,
                             (verify, audit), dict(base_url=base_url, cache_dir=cache_dir, concurrency=concurrency,
                                                  workers=workers),
                             dry_run, dict(wait=wait, poll_s=batch_poll) if batch else None)
    except BatchPending as exc:  # --no-wait: submitted, not failed
        typer.echo(f"dimobench: {exc}", err=True)
        return
    except DimobenchError as exc:
        _fail(str(exc))
    if code:
        raise typer.Exit(code)


def _use_catalog(name: str) -> None:
    """Point this run at catalog ``name`` (a shipped one such as ``catalog-v2``, or a directory)."""
    import os

    from dimobench.catalog import find_catalog, shipped_catalogs

    path = find_catalog(name)
    if path is None:
        _fail(f"--catalog {name}: no catalog there (a directory with topics/, or one of: "
              f"{', '.join(shipped_catalogs())})")
    os.environ["DIMOBENCH_CATALOG"] = str(path)  # the library reads the catalog in use from here


def _generate(out: Path, preset: str | None, overrides: dict[str, object], force: bool, resume: bool,
              checks: tuple[bool, bool], run_options: dict[str, object], dry_run: bool,
              batch: dict[str, Any] | None = None) -> int:
    from contextlib import nullcontext

    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from dimobench.api import estimate_generation, generate_suite, last_run
    from dimobench.backends.batch import BatchOptions, batching, check_provider
    from dimobench.generate.config import RunOptions, make_config
    from dimobench.generate.pipeline import STAGES

    verify, audit = checks
    cfg = make_config(preset, **overrides).check()
    options = RunOptions(**run_options)
    console = Console(stderr=True)
    if batch is not None:
        check_provider(cfg.generator)
    if dry_run:
        est = estimate_generation(cfg, options, verify=verify, batch=batch is not None)
        _print_estimate(est)
        _print_time_estimate(est, options.base_url, options.concurrency)
        return 0
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                  transient=True) as bar:
        task = bar.add_task("generating", total=len(STAGES) + int(verify) + int(audit))
        _show_calls(bar)

        def progress(stage: str, what: str) -> None:
            bar.update(task, description=f"stage {stage}: {what}")
            if what != "running":
                bar.advance(task)

        with (batching(BatchOptions(progress=lambda line: bar.update(task, description=line), **batch))
              if batch is not None else nullcontext()):
            manifest = generate_suite(cfg, out, force=force, resume=resume, progress=progress, options=options,
                                      verify=verify, audit=audit)
    from dimobench.cli.summary import print_generate_summary, print_llm_summary

    print_generate_summary(console, out, manifest, verified=verify)
    run = last_run(out) if cfg.generator != "offline" else None
    if run is not None:
        print_llm_summary(console, out, run)
        if run.get("batch_calls"):
            console.print(f"{run['batch_calls']} of those call(s) went through the OpenAI Batch API (batch prices)")
    unverified = 0
    if verify and cfg.verifier != "offline":
        from dimobench.cli.verify import print_llm_verify
        from dimobench.verify.llm import last_verify_run

        checked = last_verify_run(out)
        if checked is not None:
            print_llm_verify(console, out, checked)
            unverified = int(checked.get("unverified") or 0)
    return 1 if manifest.status == "partial" or unverified else 0


def _show_calls(bar: Any) -> None:
    """Put the run's LLM calls (done, failed, left, time to go) on a second line of the bar."""
    from dimobench.backends import progress

    tracker = progress.current()
    if tracker is not None:
        calls = bar.add_task("LLM calls: none yet", total=None)
        tracker.on_change = lambda line: bar.update(calls, description=line)


def _print_time_estimate(est: dict[str, Any], base_url: str | None, concurrency: int) -> None:
    """How long the calls would take: ``DIMOBENCH_SECONDS_PER_CALL``, else an assumption said out loud."""
    import os

    from dimobench.backends.progress import ASSUMED_S_PER_CALL, duration

    v = est.get("verify")
    calls = int(est["calls"]) + (int(v["calls"]) if isinstance(v, dict) else 0)
    if not calls or est.get("batch"):
        return
    try:
        per, why = float(os.environ["DIMOBENCH_SECONDS_PER_CALL"]), "DIMOBENCH_SECONDS_PER_CALL"
    except (KeyError, ValueError):
        kind = "local" if base_url else "hosted"
        per = ASSUMED_S_PER_CALL[kind]
        why = (f"assumed for a {'local server (small models on a CPU take minutes)' if base_url else 'hosted API'}"
               f"; set DIMOBENCH_SECONDS_PER_CALL to what one call takes")
    typer.echo(f"time: ~{duration(calls * per / max(1, concurrency))} for {calls} call(s) at {per:g} s a call "
               f"and --concurrency {concurrency} ({why}), before retries")


def _print_estimate(est: dict[str, Any]) -> None:
    def cost(value: object) -> str:
        return "unknown (no price for this model)" if value is None else f"${value:.2f}"

    price = " at batch prices" if est.get("batch") else ""
    typer.echo(f"dry run: {est['calls']} LLM call(s) to make ({est['cached']} of {est['jobs']} already cached) "
               f"with {est['generator']}, ~{est['input_tokens']} input + ~{est['output_tokens']} output tokens, "
               f"estimated cost{price} {cost(est['cost_usd_estimate'])}")
    v = est.get("verify")
    if isinstance(v, dict):
        more = (f"; up to {v['rerenders_max']} re-render(s) and as many re-checks more if turns fail their check"
                if v["rerenders_max"] else "")
        typer.echo(f"verification: {v['calls']} LLM call(s) to make ({v['cached']} of {v['jobs']} already cached: "
                   f"{v['items']} QA item(s) + {v['turn_checks']} turn check(s)) with {v['verifier']}, "
                   f"~{v['input_tokens']} input + ~{v['output_tokens']} output tokens, estimated cost"
                   f"{' at batch prices' if v.get('batch') else ''} "
                   f"{cost(v['cost_usd_estimate'])}{more}")


@app.command()
def validate(suite: Annotated[Path, typer.Argument(help="Suite directory.")]) -> None:
    """Check a suite (types, ids, references, ordering, hashes); every problem as file:line: field: message."""
    from dimobench.suite.validate import validate_suite

    if not suite.is_dir():
        _fail(f"{suite}: not a suite: {'no such directory' if not suite.exists() else 'not a directory'} "
              f"(a suite is a folder holding manifest.json)")
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

    from dimobench.suite.schema import RECORD_FILES, Manifest

    schemas = {"manifest.json": Manifest.model_json_schema(),
               **{name: model.model_json_schema() for name, model in RECORD_FILES.items()}}
    if out is None:
        typer.echo(json.dumps(schemas, indent=2))
        return
    from dimobench.errors import DimobenchError
    from dimobench.suite.io import atomic_write_text
    from dimobench.suite.outdir import claim_out

    try:
        with claim_out(out, "schema", force=True):  # an earlier export there is replaced, nothing else
            for name, sch in schemas.items():
                atomic_write_text(out / f"{name.split('.')[0]}.schema.json", json.dumps(sch, indent=2) + "\n")
    except DimobenchError as exc:
        _fail(str(exc))
    typer.echo(f"wrote {len(schemas)} schemas to {out}")


from dimobench.cli.verify import verify  # noqa: E402 - light: typer only, the verifier loads inside

app.command()(verify)
from dimobench.cli.review import review_app  # noqa: E402

app.add_typer(review_app, name="review")
from dimobench.cli.importers import import_suite  # noqa: E402

app.command(name="import")(import_suite)


from dimobench.cli.audit import audit  # noqa: E402

app.command()(audit)
from dimobench.cli.evaluate import compare, evaluate  # noqa: E402

app.command()(evaluate)
app.command()(compare)
from dimobench.cli.merge import merge  # noqa: E402 - light: typer only, the merge loads inside

app.command()(merge)
from dimobench.cli.export import export  # noqa: E402 - light: typer only, pyarrow loads inside

app.command()(export)


def main() -> None:
    """Run the CLI; Ctrl-C ends it with one line and exit status 130, an operating-system error (disk full,
    permission denied, a file vanished) with one line and exit status 2, instead of a traceback."""
    try:
        app()
    except KeyboardInterrupt:
        typer.echo("dimobench: interrupted", err=True)
        sys.exit(130)
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        typer.echo(f"dimobench: error: {exc.strerror or exc}{where}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
