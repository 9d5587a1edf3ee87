"""``dimobench verify``: judge a suite's QA items on six criteria, repair, calibrate, or show one item.

Only typer is imported at module level; the verifier (and torch, through the embedding model) loads inside
the command, so registering this command keeps ``dimobench --help`` fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer


def verify(
    suite: Annotated[Path, typer.Argument(help="Suite directory.")],
    verifier: Annotated[str, typer.Option(help="Verifier backend (offline).", envvar="DIMOBENCH_VERIFIER")
                        ] = "offline",
    only: Annotated[Optional[list[str]], typer.Option(
        "--only", help="Run only this criterion (repeatable): supported, temporally_valid, implicit, "
                       "unambiguous, type_faithful, confounder_robust.")] = None,
    repair: Annotated[bool, typer.Option(help="Regenerate REVISE/REJECT items until they pass.")] = False,
    max_tries: Annotated[int, typer.Option(help="Repair attempts per item.",
                                           envvar="DIMOBENCH_MAX_TRIES")] = 8,
    calibrate: Annotated[bool, typer.Option(help="Plant known defects in a copy and report what is caught.")
                         ] = False,
    per_defect: Annotated[int, typer.Option(help="Items planted per defect kind (--calibrate).")] = 40,
    calibrate_out: Annotated[Optional[Path], typer.Option(help="Keep the planted copy here (--calibrate).")
                             ] = None,
    show: Annotated[Optional[str], typer.Option(help="Print one item, its evidence and its verdicts.")
                    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON on stdout.")] = False,
) -> None:
    """Verify a suite: write verdicts.jsonl, update the manifest and print ACCEPT rates."""
    from dimobench.errors import DimobenchError

    try:
        _verify(suite, verifier, only, repair, max_tries, calibrate, per_defect, calibrate_out, show, as_json)
    except DimobenchError as exc:
        typer.echo(f"dimobench: error: {exc}", err=True)
        raise typer.Exit(2) from None


def _verify(suite: Path, verifier: str, only: list[str] | None, repair: bool, max_tries: int, calibrate: bool,
            per_defect: int, calibrate_out: Path | None, show: str | None, as_json: bool) -> None:
    from rich.console import Console

    from dimobench.errors import ConfigError
    from dimobench.verify import report
    from dimobench.verify.runner import check_criteria, summarise

    console = Console()
    check_criteria(only)
    if verifier != "offline":
        raise ConfigError(f"verifier {verifier!r} is not available in this version (use offline)")
    if show is not None:
        _show(console, suite, show, only)
        return
    if calibrate:
        from dimobench.verify.calibrate import calibrate as run_calibration

        figures = run_calibration(suite, per_defect=per_defect, out=calibrate_out)
        if as_json:
            typer.echo(json.dumps(figures, indent=2))
        else:
            report.print_calibration(console, figures)
        return
    if repair:
        from dimobench.suite import load_suite
        from dimobench.verify.repair import repair_suite

        fixed = repair_suite(suite, max_tries=max_tries, only=only)
        verdicts, warnings, embedder = fixed.verdicts, fixed.warnings, fixed.embedder
        summary = summarise(verdicts, load_suite(suite).qa)
        summary["repaired"], summary["unrepaired"] = fixed.repaired, fixed.unrepaired
    else:
        from dimobench.verify.runner import verify_suite

        result = verify_suite(suite, verifier, only=only)
        summary, warnings, embedder = result.summary(), result.warnings, result.embedder
    if as_json:
        typer.echo(json.dumps({"embedder": embedder, "warnings": warnings, **summary}, indent=2))
        return
    report.print_summary(console, summary, embedder, warnings)
    if repair:
        console.print(f"repaired {len(summary['repaired'])} item(s)")  # type: ignore[arg-type]
        if summary["unrepaired"]:
            missing = list(summary["unrepaired"])  # type: ignore[call-overload]
            console.print(f"[yellow]could not repair {len(missing)}:[/] " + ", ".join(missing))
    console.print(f"verdicts written to {suite / 'verdicts.jsonl'}")


def _show(console: object, suite: Path, qa_id: str, only: list[str] | None) -> None:
    from dimobench.errors import ConfigError
    from dimobench.suite import load_suite
    from dimobench.verify.offline import build_context
    from dimobench.verify.report import print_item
    from dimobench.verify.runner import check_criteria, judge, verifier_info

    loaded = load_suite(suite)
    item = next((q for q in loaded.qa if q.qa_id == qa_id), None)
    if item is None:
        raise ConfigError(f"no item {qa_id!r} in {suite / 'qa.jsonl'}")
    names = check_criteria(only)
    ctx = build_context(loaded)
    verdict = judge(item, ctx, names, verifier_info(ctx.embedder, names))
    print_item(console, item, ctx.turns.get(item.persona_id, {}), verdict)  # type: ignore[arg-type]
