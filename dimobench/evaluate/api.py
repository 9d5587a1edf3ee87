"""``evaluate`` and ``compare``: the library functions behind ``dimobench evaluate`` and ``dimobench compare``."""

from __future__ import annotations

import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from dimobench.errors import InputError
from dimobench.evaluate.protocol import SystemFailure
from dimobench.evaluate.replay import ProgressFn, SystemRun, safe_name
from dimobench.evaluate.results import EvalReport
from dimobench.strictjson import dumps
from dimobench.suite.io import atomic_write_text
from dimobench.suite.load import Suite, load_suite


class EvalConfig(BaseModel):
    """Settings of one evaluation; all recorded in report.json."""

    suites: list[Path] = Field(min_length=1)
    """Suite directories; each is scored on its own, then averaged."""
    systems: list[str] = Field(min_length=1)
    """Built-in names or ``module:Class`` paths."""
    k: int = Field(10, ge=1)
    """Items recalled per question (the same for every system)."""
    window_n: int = Field(20, ge=1)
    """Turns the ``window`` baseline keeps."""
    window: int = Field(50, ge=1)
    """Turns per accuracy window (curve and recovery)."""
    seed: int = 0
    """Seed of the bootstrap resampling."""
    bootstrap: int = Field(1000, ge=0)
    """Bootstrap resamples per interval (0 disables intervals)."""
    stats_every: int = Field(10, ge=1)
    """Sample stats() every this many turns."""
    embedding: str = "auto"
    """Answerer embedding: minilm, hashing or auto."""
    plots: bool = True
    answerer: str = "offline"
    """``offline`` (the shared embedding answerer), ``gloss`` (the same, reading recalled cue turns through the
    suite's catalog: :mod:`dimobench.evaluate.gloss`), ``offline-v4`` / ``gloss-v4`` (v4's rule for questions
    about an earlier time) or an LLM: ``openai/<model>``, ``gemini/<model>``."""
    free_text: bool = False
    """The LLM answerer writes a short answer instead of picking an option; ``judges`` grade it."""
    judges: list[str] = Field(default_factory=list)
    """Up to three LLM judges of free-text answers (majority vote)."""
    base_url: str | None = None
    """OpenAI-compatible server (or Gemini endpoint) for the answerer and judges; not recorded."""
    cache_dir: Path | None = None
    """LLM reply cache (default ``$DIMOBENCH_CACHE_DIR`` or the user cache directory); not recorded."""
    concurrency: int = Field(8, ge=1)
    """LLM calls in flight at once (per persona, after its replay); changes no answer, not recorded."""
    agents: str = "rules"
    """Sub-agents of the PreCoMem systems (precomem and its ablations): ``rules`` or an LLM, ``openai/<model>``
    or ``gemini/<model>``, reached through ``base_url`` and cached in ``cache_dir`` like the answerer."""
    call_timeout_s: float = Field(300.0, gt=0)
    """Longest a system under test may take in one call (reset, observe, recall, answer, stats) before the run
    fails with one line; changes no answer, not recorded."""
    memory_llm: str | None = None
    """LLM of the full-mode outside systems (``mem0``, ``amem``): ``openai/<model>``, reached through ``base_url``
    and cached in ``cache_dir``; unset, those systems fail with one line saying they need one."""
    jobs: int | None = Field(1, ge=1)
    """Worker processes for the units (None: one per CPU core); changes no answer, not recorded."""
    shard: str | None = None
    """``i/n``: run only this shard of the units and write no report (``dimobench merge`` builds it)."""
    executor: Literal["local", "ray"] = "local"
    """``local`` (this process or ``jobs`` worker processes) or ``ray`` (the ``ray`` extra); not recorded."""
    ray_address: str | None = None
    """Ray cluster to join (None: a running one, or a local Ray started for the run); not recorded."""
    device: Literal["cpu", "cuda"] | None = None
    """Where every encoder of dimobench and PreCoMem (MiniLM, the NLI cross-encoder) runs, here and in the
    workers (None: ``DIMOBENCH_DEVICE``, else ``cpu``); ``cuda`` that torch cannot see is a ``ConfigError`` before
    anything runs. Changes no answer beyond float rounding; not recorded (PreCoMem's ``stats()`` names a device
    other than the CPU)."""

    @field_validator("answerer")
    @classmethod
    def _one_spelling(cls, value: str) -> str:
        return value.strip()  # " gloss" must not pass the checks as gloss and then build the plain answerer


def _suite_keys(paths: list[Path]) -> list[str]:
    keys: list[str] = []
    for p in paths:
        base = Path(p).resolve().name or "suite"
        key, i = base, 2
        while key in keys:
            key, i = f"{base}-{i}", i + 1
        keys.append(key)
    return keys


def _write_answers(out: Path, system: str, runs: list[SystemRun]) -> str:
    name = f"answers-{safe_name(system)}.jsonl"
    text = "".join(dumps(a, ensure_ascii=False) + "\n" for r in runs for a in r.answers)
    atomic_write_text(out / name, text)
    return name


def evaluate(cfg: EvalConfig, out: str | Path, progress: ProgressFn | None = None, *, force: bool = False,
             resume: bool = False, prefill: Callable[[Path], None] | None = None) -> EvalReport:
    """Run every system on every suite, write answers, report.json, report.md, report.html and plots into ``out``.

    Every suite is validated first (schema, hashes, counts; ``InputError`` for a bad one, before any turn is
    replayed). ``out`` follows the output-folder rule of :func:`dimobench.suite.outdir.claim_out` and is locked
    for the run. Each unit (system x suite x persona) is kept as soon as it is done; ``resume`` reuses the
    finished ones of an earlier run with the same settings. Any report already in ``out`` is removed first and
    the new one is written last, listing the units it covers. Systems run one after another; each system's
    answers are written as soon as it finishes. When a system fails, the report of the finished systems is
    written, then :class:`SystemFailure` is raised.

    ``cfg.jobs`` and ``cfg.executor`` choose where units run (:mod:`dimobench.evaluate.executor`); the report
    is the same whichever. With ``cfg.shard`` only that shard's units run and no report is written (the
    returned one has no figures). ``prefill`` (used by ``merge``) may put units into ``out`` before the run.
    """
    from dimobench import __version__
    from dimobench.embed import get_embedder, set_default_backend, use_device
    from dimobench.evaluate.executor import check_executor, parse_shard, plan_units, shard_units
    from dimobench.evaluate.gloss import make_offline_answerer
    from dimobench.evaluate.shards import shard_report, write_marker
    from dimobench.evaluate.systems import close_systems, make_system
    from dimobench.evaluate.systems.adapters import LLM_ADAPTERS
    from dimobench.evaluate.systems.adapters.memory_llm import describe_memory_llm
    from dimobench.evaluate.systems.precomem_backend import check_agents, describe_agents
    from dimobench.evaluate.systems.precomem_system import engine_settings, is_engine
    from dimobench.evaluate.units import UnitStore
    from dimobench.suite.outdir import claim_out
    from precomem.nli import model_digests

    device = use_device(cfg.device)
    set_default_backend(cfg.embedding)
    shard = parse_shard(cfg.shard)
    check_executor(cfg.executor)  # a missing ray fails here, before the folder is claimed
    llm = _llm_answerer(cfg)  # a missing key or SDK fails here, before anything is loaded or replayed
    agents = check_agents(cfg.agents)
    precomem = {} if agents == "rules" else {"agents": agents, "base_url": cfg.base_url, "cache_dir": cfg.cache_dir}

    out = Path(out)
    keys = _suite_keys(cfg.suites)
    suites: dict[str, Suite] = {k: _valid_suite(p) for k, p in zip(keys, cfg.suites, strict=True)}
    systems = list(dict.fromkeys(cfg.systems))
    memory_llm = _memory_llm(cfg)
    built = {name: make_system(name, cfg.window_n, precomem, memory_llm, call_timeout_s=cfg.call_timeout_s,
                               hide=cfg.suites)  # bad names fail before any run; each system behind the guard
             for name in systems}
    answerer = llm if llm is not None else make_offline_answerer(cfg.answerer, get_embedder(cfg.embedding))
    runs: dict[str, list[SystemRun]] = {}
    files: dict[str, str] = {}
    config = {"dimobench_version": __version__, "python": platform.python_version(), "k": cfg.k,
              "window_n": cfg.window_n, "window": cfg.window, "seed": cfg.seed, "bootstrap": cfg.bootstrap,
              "suites": keys, "suite_paths": [str(p) for p in cfg.suites],
              "suite_configs": {k: s.manifest.config for k, s in suites.items()},
              "systems": systems, "answerer": answerer.describe(), "answers": files, "status": "complete",
              "code": code_digest()}
    engines = [name for name in systems if is_engine(name)]  # precomem:X otherwise is a module:Class system
    if engines:
        config["precomem_agents"] = describe_agents(agents)
        config["precomem_configs"] = {name: engine_settings(name, agents) for name in engines}
        config["precomem_models"] = model_digests()
    if llm is not None and llm.judges is not None:
        config["judges"] = llm.judges.describe()
    if memory_llm is not None and any(s in LLM_ADAPTERS for s in systems):
        config["memory_llm"] = describe_memory_llm(memory_llm["spec"])
    with claim_out(out, "evaluate", force=force, resume=resume):
        if prefill is not None:
            prefill(out)
        store = UnitStore(out)
        store.begin(_settings(cfg, config, suites), resume)
        for stale in ("report.json", "report.md", "report.html"):  # never an old report beside new answers
            (out / stale).unlink(missing_ok=True)
        units = shard_units(plan_units(systems, suites, {k: str(Path(p).resolve()) for k, p in
                                                         zip(keys, cfg.suites, strict=True)}), shard)
        if shard is not None:
            write_marker(out, cfg, shard, units, complete=False)
        runner = _runner(cfg, store, built, answerer, progress, out, device,
                         parent_only=llm is not None or agents != "rules")
        try:
            for name, system_runs in runner.run(units, suites):
                runs[name] = system_runs
                if shard is None:
                    files[name] = _write_answers(out, name, runs[name])
        except SystemFailure:
            config["status"] = "partial"
            if runs and shard is None:
                _write_report(runs, suites, config, cfg, out)
            raise
        finally:
            close_systems(built.values())  # ends the workers of module:Class systems
            if llm is not None:
                _log_llm_run(out, llm, runs)
        if shard is not None:
            write_marker(out, cfg, shard, units, complete=True)
            return shard_report(cfg, shard)
        return EvalReport.model_validate(_write_report(runs, suites, config, cfg, out))


def _runner(cfg: EvalConfig, store: Any, built: dict[str, Any], answerer: Any, progress: ProgressFn | None,
            out: Path, device: str, parent_only: bool) -> Any:
    """The :class:`~dimobench.evaluate.executor.Runner` of this evaluation."""
    from dimobench.evaluate.executor import Runner, resolve_jobs
    from dimobench.evaluate.worker import WorkerSpec

    spec = WorkerSpec(window_n=cfg.window_n, k=cfg.k, stats_every=cfg.stats_every, embedding=cfg.embedding,
                      call_timeout_s=cfg.call_timeout_s, answerer=cfg.answerer, device=device)
    return Runner(spec, store, built, answerer, progress, out=str(out.resolve()), jobs=resolve_jobs(cfg.jobs),
                  executor=cfg.executor, ray_address=cfg.ray_address, parent_only=parent_only)


def _settings(cfg: EvalConfig, config: dict[str, Any], suites: dict[str, Suite]) -> dict[str, Any]:
    """What changes an answer: a resumed run must match these before it reuses a unit."""
    keys = ("precomem_agents", "precomem_configs", "precomem_models", "judges", "memory_llm")
    extra: dict[str, Any] = {key: config[key] for key in keys if key in config}
    return {"dimobench_version": config["dimobench_version"], "code": config["code"], "k": cfg.k,
            "window_n": cfg.window_n, "stats_every": cfg.stats_every, "answerer": config["answerer"],
            "embedding": cfg.embedding, "suites": {k: s.manifest.files for k, s in suites.items()}, **extra}


_CODE: list[str] = []


def code_digest() -> str:
    """sha256 over the Python sources of ``dimobench`` and ``precomem`` as they are installed: an edited engine,
    baseline or answerer changes answers under an unchanged version number (an editable install, a patched
    checkout), so a run records it and refuses to resume or merge across it."""
    if not _CODE:
        import hashlib

        import precomem

        h = hashlib.sha256()
        for pkg in (Path(__file__).resolve().parents[1], Path(precomem.__file__).resolve().parent):
            for f in sorted(pkg.rglob("*.py")):
                h.update(f"{pkg.name}/{f.relative_to(pkg).as_posix()}\0".encode())
                h.update(f.read_bytes())
        _CODE.append(h.hexdigest())
    return _CODE[0]


def _valid_suite(path: Path) -> Suite:
    """Load a suite only once ``validate`` finds nothing wrong with it; ``InputError`` naming the first problem."""
    from dimobench.suite.validate import validate_suite

    problems = validate_suite(path)
    if problems:
        raise InputError(f"not a valid suite ({len(problems)} problem(s); `dimobench validate {path}` lists them); "
                         f"first: {problems[0]}", path)
    return load_suite(path)


def _memory_llm(cfg: EvalConfig) -> dict[str, Any] | None:
    """``make_system``'s ``memory_llm`` (``spec``, ``base_url``, ``cache_dir``), or None without ``--memory-llm``."""
    from dimobench.evaluate.systems.adapters.memory_llm import check_memory_llm

    spec = check_memory_llm(cfg.memory_llm)
    return None if spec is None else {"spec": spec, "base_url": cfg.base_url, "cache_dir": cfg.cache_dir}


def _llm_answerer(cfg: EvalConfig) -> Any:
    """The LLM answerer (with its judges) when ``cfg.answerer`` is not ``offline``; ``ConfigError`` on bad roles."""
    from dimobench.evaluate.gloss import OFFLINE_ANSWERERS
    from dimobench.evaluate.llm_answerer import check_roles, make_answerer

    spec, judges = check_roles(cfg.answerer, cfg.free_text, cfg.judges)
    if spec in OFFLINE_ANSWERERS:
        return None
    return make_answerer(spec, cfg.free_text, judges, base_url=cfg.base_url, cache_dir=cfg.cache_dir,
                         concurrency=cfg.concurrency)


EVAL_EVENT = "evaluate"


def _log_llm_run(out: Path, llm: Any, runs: dict[str, list[SystemRun]]) -> None:
    """Append the run's calls, cache hits, tokens, cost and failed items to ``out/.dimobench/run.log.jsonl``
    (a log, kept out of report.json so a warm rerun writes the same report bytes)."""
    from dimobench.backends.jobs import STATE_DIR, RunLog

    failed = [{"system": r.system, "suite": r.suite, "qa_id": a["qa_id"], "error": a.get("error", "")}
              for rs in runs.values() for r in rs for a in r.answers if a.get("failed")]
    RunLog(out / STATE_DIR).write({"event": EVAL_EVENT, "usage": llm.usage(), "failed": len(failed),
                                   "failed_items": failed})


def last_llm_run(out: str | Path) -> dict[str, Any] | None:
    """The latest LLM evaluation's totals from ``out/.dimobench/run.log.jsonl`` (None without one)."""
    from dimobench.backends.jobs import last_event

    return last_event(out, EVAL_EVENT)


def _write_report(runs: dict[str, list[SystemRun]], suites: dict[str, Suite], config: dict[str, Any],
                  cfg: EvalConfig, out: Path) -> dict[str, Any]:
    from dimobench.evaluate.publish import markdown, plots
    from dimobench.evaluate.report import build_report

    report = build_report(runs, suites, config, cfg.window, cfg.bootstrap, cfg.seed)
    if cfg.plots:
        config["plots"] = plots(report, suites, out)
    report["config"]["units"] = {name: {r.suite: [p.persona_id for p in suites[r.suite].personas] for r in rs}
                                 for name, rs in runs.items()}  # system -> suite -> personas it covers
    atomic_write_text(out / "report.json", dumps(report, indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(out / "report.md", markdown(report))
    _write_html(runs, suites, report, out)
    return report


def _write_html(runs: dict[str, list[SystemRun]], suites: dict[str, Suite], report: dict[str, Any],
                out: Path) -> None:
    """``report.html``: the report, every answer row and the suites' change points in one page."""
    from dimobench.evaluate.html import RunView, write_html
    from dimobench.evaluate.report import change_points

    view = RunView(report, {name: [a for r in rs for a in r.answers] for name, rs in runs.items()},
                   {key: change_points(suite) for key, suite in suites.items()}, source=str(out))
    write_html(out, [view], "dimobench evaluation: " + ", ".join(report["config"]["suites"]))


def _load_answers(report_path: Path) -> tuple[dict[str, Any], dict[str, dict[tuple[str, str], bool]]]:
    """A report and its answers' correctness per (suite, qa_id); anything malformed is an ``InputError``."""
    from dimobench.evaluate.saved import read_saved

    report, rows = read_saved(report_path)
    return report, {system: {(r["suite"], r["qa_id"]): bool(r["correct"]) for r in rs if r.get("correct") is not None}
                    for system, rs in rows.items()}


def compare(report_a: str | Path, report_b: str | Path, n: int = 1000, seed: int = 0,
            out: str | Path | None = None, *, force: bool = False) -> dict[str, Any]:
    """Per system in both reports: ``B - A`` accuracy on their shared questions with a paired bootstrap interval.

    With ``out`` (claimed like every output folder, see :func:`dimobench.suite.outdir.claim_out`) it also
    writes ``out/report.html``: the page of ``evaluate``, with the systems of both runs labelled A and B and
    this comparison as its first table.
    """
    if out is None:
        return _compare(report_a, report_b, n, seed)
    from dimobench.evaluate.html import load_run, write_html
    from dimobench.suite.outdir import claim_out

    runs = [load_run(report_a, "A"), load_run(report_b, "B")]  # a bad input fails before the folder is claimed
    with claim_out(Path(out), "compare", force=force):
        res = _compare(report_a, report_b, n, seed)
        write_html(Path(out), runs, f"dimobench comparison: A {runs[0].source} vs B {runs[1].source}", res)
    return res


def _compare(report_a: str | Path, report_b: str | Path, n: int, seed: int) -> dict[str, Any]:
    from dimobench.evaluate.scoring import paired_bootstrap

    rep_a, ans_a = _load_answers(Path(report_a))
    rep_b, ans_b = _load_answers(Path(report_b))
    answerers = [str(((r.get("config") or {}).get("answerer") or {}).get("name", "?")) for r in (rep_a, rep_b)]
    out: dict[str, Any] = {}
    for system in [s for s in ans_a if s in ans_b]:
        shared = sorted(set(ans_a[system]) & set(ans_b[system]))
        res = paired_bootstrap([ans_a[system][q] for q in shared], [ans_b[system][q] for q in shared], n, seed)
        a = sum(ans_a[system][q] for q in shared) / len(shared) if shared else None
        b = sum(ans_b[system][q] for q in shared) / len(shared) if shared else None
        out[system] = {"a": a, "b": b, **res}
    # a difference between runs read by two answerers (offline and gloss, say) is the answerers' as much as the
    # systems': the caller is told
    return {"systems": out, "only_in_a": [s for s in ans_a if s not in ans_b],
            "only_in_b": [s for s in ans_b if s not in ans_a], "answerers": {"a": answerers[0], "b": answerers[1]}}
