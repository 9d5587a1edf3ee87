"""``dimobench evaluate`` and ``dimobench compare``: typer command functions (registered in cli.py).

Library modules are imported inside the bodies so ``dimobench --help`` never loads torch or pandas.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def _fail(message: str) -> None:
    typer.echo(f"dimobench: error: {message}", err=True)
    raise typer.Exit(2)


def evaluate(
    suites: Annotated[list[Path], typer.Argument(help="Suite directories (each scored alone, then averaged).")],
    out: Annotated[Path, typer.Option(help="Directory for answers, report.json, report.md and plots.",
                                      envvar="DIMOBENCH_EVAL_OUT")],
    system: Annotated[list[str], typer.Option(
        help="Built-in (precomem, precomem:no_profile, ..., none, full, recency, window, bm25, oracle; with "
             "extras mem0-raw, langmem-store, amem-raw) or module:Class; repeat for several.",
        envvar="DIMOBENCH_SYSTEM")] = ["precomem"],  # noqa: B006
    k: Annotated[int, typer.Option(help="Items recalled per question (same for every system).",
                                   envvar="DIMOBENCH_K")] = 10,
    window_n: Annotated[int, typer.Option(help="Turns the window baseline keeps.")] = 20,
    window: Annotated[int, typer.Option(help="Turns per accuracy window (curve, recovery).")] = 50,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.", envvar="DIMOBENCH_SEED")] = 0,
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples per interval (0: none).")] = 1000,
    embedding: Annotated[str, typer.Option(help="Answerer embedding: auto, minilm or hashing.",
                                           envvar="DIMOBENCH_EMBEDDING")] = "auto",
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Write PNG plots.")] = True,
) -> None:
    """Score memory systems on drift suites: answers, report.json, report.md and plots in --out."""
    from dimobench.errors import DimobenchError

    try:
        _evaluate(suites, out, system, k, window_n, window, seed, bootstrap, embedding, plots)
    except DimobenchError as exc:
        _fail(str(exc))


def _evaluate(suites: list[Path], out: Path, systems: list[str], k: int, window_n: int, window: int, seed: int,
              bootstrap: int, embedding: str, plots: bool) -> None:
    from pydantic import ValidationError
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dimobench.errors import ConfigError
    from dimobench.evaluate.api import EvalConfig
    from dimobench.evaluate.api import evaluate as run_evaluation
    from dimobench.suite import load_suite

    try:
        cfg = EvalConfig(suites=suites, systems=systems, k=k, window_n=window_n, window=window, seed=seed,
                         bootstrap=bootstrap, embedding=embedding, plots=plots)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"--{'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    total = sum(len(load_suite(p).dialogues) for p in suites) * len(dict.fromkeys(systems))
    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("evaluating", total=total)

        def progress(system: str, suite: str, persona: str, turn: int, done: int) -> None:
            bar.update(task, advance=1, description=f"{system} | {suite} | {persona} turn {turn}")

        report = run_evaluation(cfg, out, progress)
    for name, fig in report["systems"].items():
        overall = fig.get("overall")
        shown = f"{100 * overall:.1f}%" if isinstance(overall, (int, float)) else "-"
        console.print(f"{name:28s} overall {shown}")
    console.print(f"wrote {out}/report.json, report.md, answers-*.jsonl")


def compare(
    report_a: Annotated[Path, typer.Argument(help="First report.json (or its directory).")],
    report_b: Annotated[Path, typer.Argument(help="Second report.json (or its directory).")],
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    bootstrap: Annotated[int, typer.Option(help="Paired bootstrap resamples.")] = 1000,
) -> None:
    """Per-system accuracy difference B - A on shared questions, with a paired bootstrap 95% interval."""
    from dimobench.errors import DimobenchError
    from dimobench.evaluate.api import compare as run_compare

    try:
        res = run_compare(report_a, report_b, bootstrap, seed)
    except DimobenchError as exc:
        _fail(str(exc))
        return
    if not res["systems"]:
        _fail("the two reports share no system")
    for name, r in res["systems"].items():
        if r["diff"] is None:
            typer.echo(f"{name}: no shared questions")
            continue
        ci = f" [{100 * r['lo']:+.1f}, {100 * r['hi']:+.1f}]" if r["lo"] is not None else ""
        typer.echo(f"{name}: A {100 * r['a']:.1f}% B {100 * r['b']:.1f}% diff {100 * r['diff']:+.1f}{ci} "
                   f"(n={r['n']})")
    for key, label in (("only_in_a", "only in A"), ("only_in_b", "only in B")):
        if res[key]:
            typer.echo(f"{label}: {', '.join(res[key])}")
