"""``dimobench review``: sample blind annotation sheets, fill one in the browser (``serve``), score agreement,
adjudicate, merge into the suite.

Only typer is imported at module level; :mod:`dimobench.review` (numpy, scikit-learn, and flask for
``serve``) loads inside the commands, so registering this sub-app keeps ``dimobench --help`` fast. Every
``DimobenchError`` is one line on stderr and exit code 2; ``score`` exits 1 when the verdict kappa is below
``--min-kappa``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from dimobench.cli.options import at_least

review_app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                         help="Human review: blind sheets, agreement (kappa >= 0.75 gate), adjudication.")


def _guard(call: Callable[[], Any]) -> Any:
    from dimobench.errors import DimobenchError

    try:
        return call()
    except DimobenchError as exc:
        typer.echo(f"dimobench: error: {exc}", err=True)
        raise typer.Exit(2) from None


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


@review_app.command()
def sample(
    suite: Annotated[Path, typer.Argument(help="Suite directory.")],
    out: Annotated[Path, typer.Option(help="Directory for sample.jsonl and the sheets.",
                                      envvar="DIMOBENCH_REVIEW_OUT")],
    frac: Annotated[float, typer.Option(help="Share of each stratum to sample.",
                                        envvar="DIMOBENCH_REVIEW_FRAC")] = 0.2,
    by: Annotated[str, typer.Option(help="QA fields defining the strata, comma-separated.",
                                    envvar="DIMOBENCH_REVIEW_BY")] = "qa_type,phase",
    annotators: Annotated[int, typer.Option(help="Number of annotators (sheets a, b, c, ...).",
                                            envvar="DIMOBENCH_REVIEW_ANNOTATORS")] = 2,
    names: Annotated[Optional[str], typer.Option(help="Annotator names, comma-separated (overrides "
                                                      "--annotators).",
                                                 envvar="DIMOBENCH_REVIEW_NAMES")] = None,
    calibration: Annotated[int, typer.Option(help="Calibration items shared by all annotators (inside the "
                                                  "sample).",
                                             envvar="DIMOBENCH_REVIEW_CALIBRATION")] = 30,
    seed: Annotated[int, typer.Option(help="Random seed.", envvar="DIMOBENCH_SEED")] = 0,
    force: Annotated[bool, typer.Option(help="Replace a sample already in --out.")] = False,
) -> None:
    """Draw a stratified sample and write one blind CSV sheet per annotator."""
    from dimobench.review import sample_suite

    drawn, paths = _guard(lambda: sample_suite(suite, out, frac=frac, by=_split(by) or [],
                                               annotators=annotators, names=_split(names),
                                               calibration=calibration, seed=seed, force=force))
    calib = sum(it.calibration for it in drawn.items)
    typer.echo(f"sampled {len(drawn.items)} of {sum(drawn.sizes.values())} questions from {len(drawn.sizes)} "
               f"strata (sample {drawn.sample_id}, {calib} calibration items)")
    for p in paths:
        typer.echo(f"wrote {p}")


@review_app.command()
def score(
    sheets: Annotated[list[Path], typer.Argument(help="Two or more filled-in sheets of one sample.")],
    out: Annotated[Path, typer.Option(help="agreement.json to write (agreement.md goes beside it).",
                                      envvar="DIMOBENCH_REVIEW_AGREEMENT")] = Path("agreement.json"),
    suite: Annotated[Optional[Path], typer.Option(
        help="Suite: compare the people with its verifier verdicts.")] = None,
    min_kappa: Annotated[float, typer.Option(help="Gate on the verdict kappa (exit 1 below it).",
                                             envvar="DIMOBENCH_MIN_KAPPA")] = 0.75,
    sample_file: Annotated[Optional[Path], typer.Option("--sample", help="sample.jsonl (default: beside the "
                                                                           "first sheet, if there).")] = None,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.", envvar="DIMOBENCH_SEED",
                                      callback=at_least("--seed", 0))] = 0,
) -> None:
    """Agreement between annotators (Cohen's kappa, Krippendorff's alpha) and with the verifier."""
    from dimobench.review import score_sheets

    res = _guard(lambda: score_sheets(sheets, out, suite=suite, min_kappa=min_kappa, sample=sample_file,
                                      seed=seed))
    for f, k in res["kappa"].items():
        extra = f"  alpha {res['alpha'][f]:.3f}" if res.get("alpha") and res["alpha"][f] is not None else ""
        shown = "n/a (" + res["kappa_notes"].get(f, "undefined") + ")" if k is None else f"{k:.3f}"
        typer.echo(f"{f:18} kappa {shown}{extra}")
    if res["verifier"]:
        v = res["verifier"]
        agreement = "n/a" if v["agreement"] is None else f"{100 * v['agreement']:.1f}%"
        typer.echo(f"verifier agrees with the people on {agreement} of {v['n']} items ({v['source']})")
    gate = res["gate"]
    typer.echo(f"wrote {out} and {out.with_suffix('.md')}")
    if not gate["passed"]:
        value = "undefined" if gate["value"] is None else f"{gate['value']:.3f}"
        typer.echo(f"gate not met: verdict kappa {value} < {min_kappa}", err=True)
        raise typer.Exit(1)
    typer.echo(f"gate passed: verdict kappa {gate['value']:.3f} >= {min_kappa}")


@review_app.command()
def adjudicate(
    sheets: Annotated[list[Path], typer.Argument(help="Two or more filled-in sheets of one sample.")],
    out: Annotated[Path, typer.Option(help="adjudication.csv to write.")] = Path("adjudication.csv"),
    sample_file: Annotated[Optional[Path], typer.Option("--sample", help="sample.jsonl (default: beside the "
                                                                           "first sheet, if there).")] = None,
) -> None:
    """List the items annotators disagree on, with an empty final_verdict column for the lead."""
    from dimobench.review import adjudicate_sheets

    n = _guard(lambda: adjudicate_sheets(sheets, out, sample=sample_file))
    typer.echo(f"wrote {out}: {n} disputed item(s) to settle "
               "(fill in final_verdict: ACCEPT, REVISE or REJECT)")


@review_app.command()
def merge(
    adjudication: Annotated[Path, typer.Argument(help="The settled adjudication.csv.")],
    suite: Annotated[Path, typer.Option(help="Suite to write human_verdicts.jsonl into.",
                                        envvar="DIMOBENCH_SUITE")],
    sheets: Annotated[Optional[list[Path]], typer.Argument(help="The sheets (default: sheet_<name>.csv beside the "
                                                                 "adjudication file, per its columns).")] = None,
    sample_file: Annotated[Optional[Path], typer.Option("--sample", help="sample.jsonl (default: beside the "
                                                                           "first sheet, if there).")] = None,
) -> None:
    """Write the human verdicts (agreed, or settled by the lead) into the suite as human_verdicts.jsonl."""
    from dimobench.review import merge_adjudication

    path, sources = _guard(lambda: merge_adjudication(adjudication, suite, sheets or [], sample=sample_file))
    typer.echo(f"wrote {path}: {sources['agreed']} agreed, {sources['adjudicated']} adjudicated; "
               "manifest updated")


@review_app.command()
def serve(
    sample_dir: Annotated[Path, typer.Argument(help="The --out folder of `review sample`.")],
    annotator: Annotated[str, typer.Option(help="Whose sheet to fill in (sheet_<name>.csv); no other is opened.",
                                           envvar="DIMOBENCH_REVIEW_ANNOTATOR")],
    suite: Annotated[Optional[Path], typer.Option(
        help="The suite the sample was drawn from (default: the one `review sample` recorded): shows the "
             "dialogue around the evidence and the earlier turns on the trait (without a suite, the sheet's "
             "evidence and context cells).",
        envvar="DIMOBENCH_SUITE")] = None,
    port: Annotated[int, typer.Option(help="Port (0: any free one).", envvar="DIMOBENCH_REVIEW_PORT",
                                      callback=at_least("--port", 0))] = 8765,
    host: Annotated[str, typer.Option(help="Address to listen on; a non-loopback one lets other machines in.",
                                      envvar="DIMOBENCH_REVIEW_HOST")] = "127.0.0.1",
) -> None:
    """A local web page to label one annotator's sheet, item by item, with keyboard shortcuts."""
    from dimobench.review.serve import ReviewApp, is_loopback
    from dimobench.review.serve import serve as run
    from dimobench.review.workflow import sample_source

    suite = suite or sample_source(sample_dir)

    def ready(url: str, review: ReviewApp) -> None:
        rows = review.store.rows()
        typer.echo(f"{review.store.path}: {sum(r.done for r in rows)} of {len(rows)} items labelled")
        if not is_loopback(host):
            typer.echo(f"warning: listening on {host}: anyone who can reach it can read and change this sheet",
                       err=True)
        typer.echo(f"open {url} (Ctrl+C to stop; every answer is saved as you go)")

    _guard(lambda: run(sample_dir, annotator, host=host, port=port, suite=suite, ready=ready))
