"""``dimobench evaluate`` and ``dimobench compare``: typer command functions (registered in cli.py).

Library modules are imported inside the bodies so ``dimobench --help`` never loads torch or pandas.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from dimobench.cli.options import BaseUrl, CacheDir, Concurrency, JsonMode, Timeout, at_least, time_budget


def _fail(message: str) -> None:
    typer.echo(f"dimobench: error: {message}", err=True)
    raise typer.Exit(2)


def evaluate(
    suites: Annotated[list[Path], typer.Argument(help="Suite directories (each scored alone, then averaged).")],
    out: Annotated[Path, typer.Option(help="Directory for answers, report.json, report.md and plots.",
                                      envvar="DIMOBENCH_EVAL_OUT")],
    system: Annotated[list[str], typer.Option(
        help="Built-in (precomem, precomem:no_profile, ..., none, full, recency, window, bm25, oracle; with "
             "extras mem0-raw, langmem-store, amem-raw, and with --memory-llm mem0, amem) or module:Class; "
             "repeat for several.",
        envvar="DIMOBENCH_SYSTEM")] = ["precomem"],  # noqa: B006
    k: Annotated[int, typer.Option(help="Items recalled per question (same for every system).",
                                   envvar="DIMOBENCH_K")] = 10,
    window_n: Annotated[int, typer.Option(help="Turns the window baseline keeps.")] = 20,
    window: Annotated[int, typer.Option(help="Turns per accuracy window (curve, recovery).")] = 50,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.", envvar="DIMOBENCH_SEED",
                                      callback=at_least("--seed", 0))] = 0,
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples per interval (0: none).")] = 1000,
    embedding: Annotated[str, typer.Option(help="Answerer embedding: auto, minilm or hashing.",
                                           envvar="DIMOBENCH_EMBEDDING")] = "auto",
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Write PNG plots.")] = True,
    answerer: Annotated[str, typer.Option(
        help="offline (shared embedding answerer), gloss (the same, reading recalled cue turns through the suite's "
             "catalog), offline-v4 or gloss-v4 (v4's rule for questions about the past), openai, openai/MODEL, "
             "gemini or gemini/MODEL (default models gpt-4o, gemini-2.5-pro).",
        envvar="DIMOBENCH_ANSWERER")] = "offline",
    free_text: Annotated[bool, typer.Option(help="LLM answerer writes a short answer; --judge grades it.",
                                            envvar="DIMOBENCH_FREE_TEXT")] = False,
    judge: Annotated[list[str], typer.Option(
        help="LLM judge of free-text answers, like --answerer; repeat for 2-3 judges (majority vote).",
        envvar="DIMOBENCH_JUDGE")] = [],  # noqa: B006
    base_url: BaseUrl = None,
    cache_dir: CacheDir = None,
    concurrency: Concurrency = 8,
    agents: Annotated[str, typer.Option(
        help="Sub-agents of precomem and its ablations: rules, or an LLM (openai/MODEL, gemini/MODEL) reached "
             "through --base-url and cached in --cache-dir.", envvar="DIMOBENCH_AGENTS")] = "rules",
    memory_llm: Annotated[Optional[str], typer.Option(
        help="LLM of the full-mode systems mem0 and amem (openai/MODEL), reached through --base-url and cached "
             "in --cache-dir; key from OPENAI_API_KEY.", envvar="DIMOBENCH_MEMORY_LLM")] = None,
    timeout: Timeout = None,
    json_mode: JsonMode = "json_schema",
    call_timeout: Annotated[float, typer.Option(
        help="Seconds a system under test may take in one call before the run fails with one line.",
        envvar="DIMOBENCH_CALL_TIMEOUT")] = 300.0,
    force: Annotated[bool, typer.Option(help="Replace an earlier evaluation in --out.")] = False,
    resume: Annotated[bool, typer.Option(help="Continue an evaluation in --out: finished units (system x suite "
                                              "x persona) are reused, the rest are run.")] = False,
    jobs: Annotated[Optional[int], typer.Option(
        help="Worker processes for the units (default: one per CPU core); the report is the same for any N. "
             "LLM-backed roles and module:Class systems always run in the main process.",
        envvar="DIMOBENCH_JOBS", callback=at_least("--jobs", 1))] = None,
    shard: Annotated[Optional[str], typer.Option(
        help="i/n: run only this 1/n of the units and write no report; `dimobench merge` joins the n folders.",
        envvar="DIMOBENCH_SHARD")] = None,
    executor: Annotated[str, typer.Option(help="local (worker processes, --jobs) or ray (the ray extra).",
                                          envvar="DIMOBENCH_EXECUTOR")] = "local",
    ray_address: Annotated[Optional[str], typer.Option(
        help="Ray cluster to join with --executor ray (default: a running one, else a local Ray).",
        envvar="DIMOBENCH_RAY_ADDRESS")] = None,
    device: Annotated[str, typer.Option(
        help="cpu or cuda: where dimobench's and PreCoMem's encoders run (MiniLM, the cross-encoder), in every "
             "worker; cuda runs them on torch and fails with one line when torch sees no GPU. Outside libraries "
             "(mem0-raw, amem-raw) pick their own device.",
        envvar="DIMOBENCH_DEVICE")] = "cpu",
) -> None:
    """Score memory systems on drift suites: answers, report.json, report.md, report.html and plots in --out."""
    from dimobench.errors import DimobenchError

    try:
        with time_budget(timeout, "rerun (finished calls come from the cache)", json_mode):
            code = _evaluate(suites, out, system, k, window_n, window, seed, bootstrap, embedding, plots,
                             dict(answerer=answerer, free_text=free_text, judges=judge, base_url=base_url,
                                  cache_dir=cache_dir, concurrency=concurrency, agents=agents,
                                  memory_llm=memory_llm, call_timeout_s=call_timeout, jobs=jobs, shard=shard,
                                  executor=executor, ray_address=ray_address, device=device), (force, resume))
    except DimobenchError as exc:
        _fail(str(exc))
    if code:
        raise typer.Exit(code)


def _evaluate(suites: list[Path], out: Path, systems: list[str], k: int, window_n: int, window: int, seed: int,
              bootstrap: int, embedding: str, plots: bool, llm: dict[str, Any], flags: tuple[bool, bool]) -> int:
    from pydantic import ValidationError
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dimobench.errors import ConfigError
    from dimobench.evaluate.api import EvalConfig
    from dimobench.evaluate.api import evaluate as run_evaluation
    from dimobench.evaluate.llm_answerer import check_roles
    from dimobench.evaluate.systems.adapters.memory_llm import check_memory_llm
    from dimobench.evaluate.systems.precomem_backend import check_agents
    from dimobench.suite.load import load_suite

    try:
        cfg = EvalConfig(suites=suites, systems=systems, k=k, window_n=window_n, window=window, seed=seed,
                         bootstrap=bootstrap, embedding=embedding, plots=plots, **llm)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"--{'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    check_roles(cfg.answerer, cfg.free_text, cfg.judges)  # one clear line before any suite is read
    check_agents(cfg.agents)
    check_memory_llm(cfg.memory_llm)
    total = sum(len(load_suite(p).dialogues) for p in suites) * len(dict.fromkeys(systems))
    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("evaluating", total=total)

        def progress(system: str, suite: str, persona: str, turn: int, done: int) -> None:
            bar.update(task, advance=1, description=f"{system} | {suite} | {persona} turn {turn}")

        report = run_evaluation(cfg, out, progress, force=flags[0], resume=flags[1])
    if cfg.shard is not None:
        console.print(f"wrote shard {cfg.shard} of the units to {out}; join the shards with dimobench merge")
        return 0
    for name, fig in report.systems.items():
        shown = "-" if fig.overall is None else f"{100 * fig.overall:.1f}%"
        console.print(f"{name:28s} overall {shown}")
    console.print(f"wrote {out}/report.json, report.md, report.html, answers-*.jsonl")
    from dimobench.evaluate.gloss import OFFLINE_ANSWERERS

    return _print_llm_summary(console, out) if cfg.answerer not in OFFLINE_ANSWERERS else 0


def _print_llm_summary(console: Any, out: Path) -> int:
    """Calls, cache hits, tokens and cost per LLM role; exit code 1 when some items failed after retries."""
    from dimobench.evaluate.api import last_llm_run

    run = last_llm_run(out)
    if run is None:
        return 0
    for u in run["usage"]:
        cost = u.get("cost_usd_estimate")
        console.print(f"LLM {u['role']} {u['spec']}: {u['calls']} call(s), {u['cache_hits']} from cache, "
                      f"{u['input_tokens']} input + {u['output_tokens']} output tokens, estimated cost "
                      f"{'unknown' if cost is None else f'${cost:.4f}'}", highlight=False)
    failed = run.get("failed", 0)
    for f in run.get("failed_items", [])[:10]:
        console.print(f"failed {f['system']} {f['qa_id']}: {f['error']}", markup=False, highlight=False)
    if failed:
        console.print(f"{failed} answer(s) failed after their retries and count as wrong (field \"error\" in "
                      f"answers-*.jsonl); rerun with --resume to retry only them (finished calls come from the cache)",
                      markup=False, highlight=False)
        return 1
    return 0


def compare(
    report_a: Annotated[Path, typer.Argument(help="First report.json (or its directory).")],
    report_b: Annotated[Path, typer.Argument(help="Second report.json (or its directory).")],
    seed: Annotated[int, typer.Option(help="Bootstrap seed.", callback=at_least("--seed", 0))] = 0,
    bootstrap: Annotated[int, typer.Option(help="Paired bootstrap resamples (0: no interval).",
                                           callback=at_least("--bootstrap", 0))] = 1000,
    out: Annotated[Optional[Path], typer.Option(help="Also write report.html here: both runs in one page.",
                                                envvar="DIMOBENCH_COMPARE_OUT")] = None,
    force: Annotated[bool, typer.Option(help="Replace an earlier comparison in --out.")] = False,
) -> None:
    """Per-system accuracy difference B - A on shared questions, with a paired bootstrap 95% interval."""
    from dimobench.errors import DimobenchError
    from dimobench.evaluate.api import compare as run_compare

    try:
        res = run_compare(report_a, report_b, bootstrap, seed, out, force=force)
    except DimobenchError as exc:
        _fail(str(exc))
        return
    if not res["systems"]:
        _fail("the two reports share no system")
    used = res["answerers"]
    if used["a"] != used["b"]:
        typer.echo(f"note: A was answered by {used['a']} and B by {used['b']}: the differences below are the "
                   "answerers' as much as the systems'")
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
    if out is not None:
        typer.echo(f"wrote {out}/report.html")
