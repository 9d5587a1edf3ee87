"""``dimobench verify``: judge a suite's QA items on six criteria, repair, calibrate, or show one item.

Only typer is imported at module level; the verifier (and torch, through the embedding model) loads inside
the command, so registering this command keeps ``dimobench --help`` fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from dimobench.cli.options import BaseUrl, BatchPoll, CacheDir, Concurrency, JsonMode, Timeout, at_least, time_budget


def verify(
    suite: Annotated[Path, typer.Argument(help="Suite directory.")],
    verifier: Annotated[str, typer.Option(
        help="offline (default), openai, openai/MODEL, gemini or gemini/MODEL (default models gpt-4o, "
             "gemini-2.5-pro).", envvar="DIMOBENCH_VERIFIER")] = "offline",
    only: Annotated[Optional[list[str]], typer.Option(
        "--only", help="Run only this criterion (repeatable): supported, temporally_valid, implicit, "
                       "unambiguous, type_faithful, confounder_robust.")] = None,
    repair: Annotated[bool, typer.Option(help="Regenerate REVISE/REJECT items until they pass.")] = False,
    max_tries: Annotated[int, typer.Option(help="Repair attempts per item.", envvar="DIMOBENCH_MAX_TRIES",
                                           callback=at_least("--max-tries", 1))] = 8,
    calibrate: Annotated[bool, typer.Option(help="Plant known defects in a copy and report what is caught.")
                         ] = False,
    per_defect: Annotated[int, typer.Option(help="Items planted per defect kind (--calibrate).",
                                            callback=at_least("--per-defect", 1))] = 40,
    calibrate_out: Annotated[Optional[Path], typer.Option(help="Keep the planted copy here (--calibrate).")
                             ] = None,
    show: Annotated[Optional[str], typer.Option(help="Print one item, its evidence and its verdicts.")
                    ] = None,
    plan_checks: Annotated[str, typer.Option(
        help="Offline: reject the items the suite's latent plan flags (dimobench audit's per-item flags): auto "
             "(for --qa-rules valid suites), on or off.")] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON on stdout.")] = False,
    base_url: BaseUrl = None,
    cache_dir: CacheDir = None,
    concurrency: Concurrency = 8,
    resume: Annotated[bool, typer.Option(help="Keep the calls an interrupted LLM run finished.")] = False,
    generator: Annotated[Optional[str], typer.Option(
        help="Backend that re-renders unfaithful turns of an LLM-written suite (default: the suite's own).")
                         ] = None,
    rerender: Annotated[bool, typer.Option(help="Re-render LLM-written turns that fail their check.")] = True,
    batch: Annotated[bool, typer.Option(help="Send an openai verifier's calls through the OpenAI Batch API: half "
                                             "price, done within 24 h.", envvar="DIMOBENCH_BATCH")] = False,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="With --batch: wait for each batch, or exit once "
                                                                "it is submitted (rerun to collect it).")] = True,
    batch_poll: BatchPoll = 30.0,
    timeout: Timeout = None,
    json_mode: JsonMode = "json_schema",
) -> None:
    """Verify a suite: write verdicts.jsonl, update the manifest and print ACCEPT rates.

    An LLM verifier first checks LLM-written turns (re-rendering failures); exit 1 if some item was not verified.
    """
    from dimobench.backends.batch import BatchPending
    from dimobench.errors import DimobenchError

    if not wait and not batch:
        typer.echo("dimobench: error: --no-wait only applies with --batch", err=True)
        raise typer.Exit(2)
    from dimobench.verify.verdicts import PLAN_CHECKS

    if plan_checks not in PLAN_CHECKS:
        typer.echo(f"dimobench: error: --plan-checks {plan_checks!r}: choose {', '.join(PLAN_CHECKS)}", err=True)
        raise typer.Exit(2)
    llm_options = dict(base_url=base_url, cache_dir=cache_dir, concurrency=concurrency, resume=resume,
                       generator=generator, rerender=rerender)
    try:
        with time_budget(timeout, "rerun with --resume", json_mode):
            code = _verify(suite, verifier, only, repair, max_tries, calibrate, per_defect, calibrate_out, show,
                           as_json, llm_options, dict(wait=wait, poll_s=batch_poll) if batch else None,
                           plan_checks)
    except BatchPending as exc:  # --no-wait: submitted, not failed
        typer.echo(f"dimobench: {exc}", err=True)
        return
    except DimobenchError as exc:
        typer.echo(f"dimobench: error: {exc}", err=True)
        raise typer.Exit(2) from None
    if code:
        raise typer.Exit(code)


def _verify(suite: Path, verifier: str, only: list[str] | None, repair: bool, max_tries: int, calibrate: bool,
            per_defect: int, calibrate_out: Path | None, show: str | None, as_json: bool,
            llm_options: dict[str, Any], batch: dict[str, Any] | None = None, plan_checks: str = "auto") -> int:
    from rich.console import Console

    from dimobench.backends import normalize_spec
    from dimobench.errors import ConfigError
    from dimobench.verify import console as tables
    from dimobench.verify.verdicts import check_criteria, summarise

    console = Console()
    check_criteria(only)
    verifier = normalize_spec(verifier, "--verifier")  # "openai" alone means openai/gpt-4o
    if batch is not None:
        from dimobench.backends.batch import check_provider

        check_provider(verifier, "--verifier")
    if verifier != "offline" and (show is not None or calibrate or repair):
        raise ConfigError("--show, --calibrate and --repair use the offline verifier (drop --verifier)")
    if show is not None:
        _show(console, suite, show, only)
        return 0
    if calibrate:
        from dimobench.verify.calibrate import calibrate as run_calibration

        figures = run_calibration(suite, per_defect=per_defect, out=calibrate_out, plan_checks=plan_checks)
        if as_json:
            typer.echo(json.dumps(figures, indent=2))
        else:
            tables.print_calibration(console, figures)
        return 0
    from contextlib import nullcontext

    from dimobench.suite.outdir import lock_folder

    # verification rewrites the suite's files: one writer at a time (a missing suite fails below, as before)
    with lock_folder(suite, "suite") if (suite / "manifest.json").is_file() else nullcontext():
        run: dict[str, Any] | None = None
        if repair:
            from dimobench.suite.load import load_suite
            from dimobench.verify.repair import repair_suite

            fixed = repair_suite(suite, max_tries=max_tries, only=only)
            verdicts, warnings, embedder = fixed.verdicts, fixed.warnings, fixed.embedder
            summary = summarise(verdicts, load_suite(suite).qa)
            summary["repaired"], summary["unrepaired"] = fixed.repaired, fixed.unrepaired
        else:
            from dimobench.backends.batch import BatchOptions, batching
            from dimobench.verify import verify_suite

            err = Console(stderr=True)
            with (batching(BatchOptions(progress=lambda line: err.print(line, highlight=False), **batch))
                  if batch is not None else nullcontext()):
                result = verify_suite(suite, verifier, only=only, **(llm_options if verifier != "offline"
                                                                     else {"plan_checks": plan_checks}))
            summary, warnings, embedder = result.summary(), result.warnings, result.embedder
            run = getattr(result, "run", None)
    if as_json:
        typer.echo(json.dumps({"verifier": verifier, "embedder": embedder, "warnings": warnings, **summary,
                               **({"llm": run} if run else {})}, indent=2))
        return 1 if run and run["unverified"] else 0
    tables.print_summary(console, summary, embedder, warnings, verifier)
    if repair:
        console.print(f"repaired {len(summary['repaired'])} item(s)")  # type: ignore[arg-type]
        if summary["unrepaired"]:
            missing = list(summary["unrepaired"])  # type: ignore[call-overload]
            console.print(f"[yellow]could not repair {len(missing)}:[/] " + ", ".join(missing))
    console.print(f"verdicts written to {suite / 'verdicts.jsonl'}")
    if run is not None:
        from dimobench.verify.llm import last_verify_run

        print_llm_verify(Console(stderr=True), suite, last_verify_run(suite) or run)
        return 1 if run["unverified"] else 0
    return 0


def print_llm_verify(console: Any, suite: Path, run: dict[str, Any]) -> None:
    """Calls, cache hits, tokens and cost of an LLM verification, its turn checks, and what failed."""

    def usage(spec: str, r: dict[str, Any]) -> str:
        cost = r.get("cost_usd_estimate")
        return (f"{spec}: {r['calls']} call(s), {r['cache_hits']} from cache, {r['input_tokens']} input + "
                f"{r['output_tokens']} output tokens, estimated cost {'unknown' if cost is None else f'${cost:.4f}'}")

    console.print(f"LLM verifier {usage(run['verifier'], run)}; prompt hash {run.get('prompt_hash')}",
                  highlight=False)
    turns = run.get("turns") or {}
    if turns.get("checked"):
        console.print(f"rendered turns: {turns['checked']} checked, {turns['faithful']} faithful, "
                      f"{turns['rerendered']} re-rendered, {turns['unfixed']} kept unfixed, "
                      f"{turns['unchecked']} not checked (details in {suite}/.dimobench/faithfulness.jsonl)",
                      highlight=False)
    if run.get("rerender") and (run["rerender"]["calls"] or run["rerender"]["cache_hits"]):
        console.print(f"re-rendering with {usage(run['rerender']['generator'], run['rerender'])}", highlight=False)
    failed = run.get("failed_items") or []
    for f in failed:
        console.print(f"[red]failed[/] {f['item']}: {f['error']}", markup=True, highlight=False)
    if run.get("unverified"):
        console.print(f"[red]{run['unverified']} item(s) could not be verified[/]: their criteria are UNSCORED; "
                      f"rerun with --resume to retry only them (details in {suite}/.dimobench/verify-failures.jsonl)")


def _show(console: object, suite: Path, qa_id: str, only: list[str] | None) -> None:
    from dimobench.errors import ConfigError
    from dimobench.suite.load import load_suite
    from dimobench.verify.console import print_item
    from dimobench.verify.offline import build_context
    from dimobench.verify.verdicts import check_criteria, judge, verifier_info

    loaded = load_suite(suite)
    item = next((q for q in loaded.qa if q.qa_id == qa_id), None)
    if item is None:
        raise ConfigError(f"no item {qa_id!r} in {suite / 'qa.jsonl'}")
    names = check_criteria(only)
    ctx = build_context(loaded)
    verdict = judge(item, ctx, names, verifier_info(ctx.embedder, names))
    print_item(console, item, ctx.turns.get(item.persona_id, {}), verdict)  # type: ignore[arg-type]
