"""The library API the CLI calls and users import."""

from __future__ import annotations

from pathlib import Path

from dimobench import __version__
from dimobench.estimate import estimate_generation
from dimobench.generate.config import GenerateConfig, RunOptions
from dimobench.generate.pipeline import ProgressFn, run_stages, stage_records
from dimobench.suite.card import render_card
from dimobench.suite.io import atomic_write_text
from dimobench.suite.load import Suite, counts, load_suite, write_suite
from dimobench.suite.outdir import prepare_out
from dimobench.suite.schema import Manifest
from dimobench.suite.validate import validate_suite

__all__ = ["GenerateConfig", "RunOptions", "Suite", "estimate_generation", "generate_suite", "last_run",
           "load_suite", "validate_suite"]


def generate_suite(cfg: GenerateConfig, out: str | Path, *, force: bool = False, resume: bool = False,
                   progress: ProgressFn | None = None, options: RunOptions | None = None,
                   verify: bool = False) -> Manifest:
    """Generate a suite into ``out`` and return its manifest.

    Same config and seed give byte-identical ``manifest.json`` and ``*.jsonl``; run state lives in
    ``out/.dimobench/``. Raises ``ConfigError`` for settings that cannot work and for a non-empty ``out``
    without ``force`` or ``resume``, and ``BackendError`` for a generator that cannot be used (no key, no
    SDK); nothing is written in those cases. With an LLM generator, calls that fail after their retries
    leave their items with the offline text and the manifest's status ``partial`` (details in
    :func:`last_run`); a rerun with ``resume`` retries only those.

    ``verify=True`` runs stage 6 (``dimobench.verify.verify_suite`` with ``cfg.verifier``) on the written
    suite; the CLI does this unless ``--no-verify``. The library leaves it off so scripts choose. An LLM
    verifier records calls it could not make in ``out/.dimobench/`` (see
    :func:`dimobench.verify.llm.last_verify_run`); their items stay UNSCORED.
    """
    from dimobench.backends import resolve_backend

    cfg = cfg.check()
    options = options or RunOptions()
    out = Path(out)
    llm = resolve_backend(cfg.generator, base_url=options.base_url, cache_dir=options.cache_dir,
                          timeout=options.timeout)
    if verify and cfg.verifier != "offline":  # a missing key or SDK fails here, before anything is written
        resolve_backend(cfg.verifier, base_url=options.base_url, cache_dir=options.cache_dir,
                        timeout=options.timeout)
    prepare_out(out, force=force, resume=resume)
    run = run_stages(cfg, out, progress, llm=llm, concurrency=options.concurrency)
    res = run["results"]
    personas, schedules = res["personas"].personas, res["drift"].schedules
    turns, qa = res["confounders"].turns, res["qa"].qa
    status = "complete"
    if run["llm"] is not None:
        personas, turns, qa = run["llm"]["personas"], run["llm"]["turns"], run["llm"]["qa"]
        status = "partial" if run["llm"]["failures"] else "complete"
    config = {
        "seed": cfg.seed, "preset": cfg.preset, "personas": cfg.personas, "turns": cfg.turns, "drifts": cfg.drifts,
        "qa": cfg.qa_per_persona, "traits": cfg.traits, "transition_frac": cfg.transition_frac,
        "post_change_frac": cfg.post_change_frac, "cue_rate": cfg.cue_rate,
        "maintenance_cue_rate": cfg.maintenance_cue_rate, "confounder_rate": cfg.confounder_rate,
        "backends": {"generator": run["backend"], "verifier": None},
    }
    manifest = write_suite(out, {"personas.jsonl": personas, "schedules.jsonl": schedules,
                                 "dialogues.jsonl": turns, "qa.jsonl": qa},
                           {"status": status, "dimobench_version": __version__, "config": config,
                            "counts": counts(personas, turns, qa), "stages": stage_records(run["fingerprints"])})
    atomic_write_text(out / "README.md", render_card(manifest))
    if verify:
        from dimobench.verify import verify_suite

        if progress:
            progress("verify", "running")
        verify_suite(out, cfg.verifier, base_url=options.base_url, cache_dir=options.cache_dir,
                     concurrency=options.concurrency, timeout=options.timeout, resume=resume)
        if progress:
            progress("verify", "done")
        manifest = Manifest.model_validate_json((out / "manifest.json").read_text(encoding="utf-8"))
    return manifest


def last_run(out: str | Path) -> dict[str, object] | None:
    """The latest LLM run's totals and failures from ``out/.dimobench/`` (None for an offline suite)."""
    from dimobench.backends.jobs import last_event
    from dimobench.generate.rewrite import FAILURES

    return last_event(out, "generate", failures=FAILURES)
