"""The library's face: the functions the CLI calls and users import, one per step of the data path.

``generate_suite`` -> ``verify_suite`` -> ``sample_review`` / ``score_review`` -> ``evaluate`` (and ``compare``),
plus ``load_suite`` and ``validate_suite`` for any suite. Results are typed: a :class:`Manifest`, a
:class:`VerifyResult`, an :class:`EvalReport`. Heavy modules (torch, numpy) load only inside the calls that need
them, so ``import dimobench.api`` stays quick.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dimobench import __version__
from dimobench.estimate import estimate_generation
from dimobench.generate.config import GenerateConfig, RunOptions
from dimobench.generate.pipeline import ProgressFn, run_stages, stage_records
from dimobench.suite.card import render_card
from dimobench.suite.io import atomic_write_text
from dimobench.suite.load import Suite, counts, load_suite, write_suite
from dimobench.suite.outdir import claim_out
from dimobench.suite.schema import Manifest
from dimobench.suite.validate import validate_suite

if TYPE_CHECKING:
    from dimobench.audit.card import AuditReport
    from dimobench.evaluate.api import EvalConfig
    from dimobench.evaluate.replay import ProgressFn as EvalProgressFn
    from dimobench.evaluate.results import EvalReport
    from dimobench.export import ExportResult
    from dimobench.review.sampling import Sample
    from dimobench.verify.verdicts import VerifyResult

__all__ = ["AuditReport", "EvalConfig", "EvalReport", "ExportResult", "GenerateConfig", "RunOptions", "Suite",
           "VerifyResult", "audit_suite", "compare", "estimate_generation", "evaluate", "export_suite",
           "generate_suite", "last_run", "load_suite", "merge_shards", "sample_review", "score_review",
           "validate_suite", "verify_suite"]

_LAZY = {"AuditReport": "dimobench.audit.card", "EvalConfig": "dimobench.evaluate.api",
         "EvalReport": "dimobench.evaluate.results", "ExportResult": "dimobench.export",
         "VerifyResult": "dimobench.verify.verdicts"}


def __getattr__(name: str) -> Any:
    """Config and result models of the heavier stages, imported on first use."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def generate_suite(cfg: GenerateConfig, out: str | Path, *, force: bool = False, resume: bool = False,
                   progress: ProgressFn | None = None, options: RunOptions | None = None,
                   verify: bool = False, audit: bool = False) -> Manifest:
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

    ``audit=True`` then attacks the written suite (:func:`audit_suite`; offline, its learned attacks train on
    three suites of other seeds, :func:`reference_seeds`; LLM-written, leave-one-persona-out) and records the
    validity card in the manifest (``audit``) and the suite's README; a failed gate does not fail generation.
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
    with claim_out(out, "generate", force=force, resume=resume):
        carried = _human_verdicts(out) if resume else None
        return _generate_into(out, cfg, options, llm, progress, (verify, audit), resume, carried)


def _json_mode(llm: Any) -> str | None:
    """The structured-output mode the generator used; an ``auto`` one not probed yet (every reply came from
    the cache) probes now, so a warm rerun records the same mode as the cold run."""
    inner = getattr(llm, "inner", llm)
    return inner.mode() if callable(getattr(inner, "mode", None)) else None


def _generate_into(out: Path, cfg: GenerateConfig, options: RunOptions, llm: Any, progress: ProgressFn | None,
                   checks: tuple[bool, bool], resume: bool, carried: tuple[list[str], object] | None) -> Manifest:
    """The body of :func:`generate_suite` once ``out`` is claimed: stages 1-5, stage 6, the audit.

    The manifest says ``incomplete`` until verification and the audit it was asked for have finished, so a run
    killed in between never leaves a suite that claims to be complete.
    """
    verify, audit = checks
    from dimobench.generate.parallel import auto_workers

    run = run_stages(cfg, out, progress, llm=llm, concurrency=options.concurrency,
                     workers=options.workers or auto_workers(cfg.personas, cfg.turns))
    res = run["results"]
    personas, schedules = res["personas"].personas, res["drift"].schedules
    turns, qa = res["confounders"].turns, res["qa"].qa
    status = "complete"
    if run["llm"] is not None:
        personas, turns, qa = run["llm"]["personas"], run["llm"]["turns"], run["llm"]["qa"]
        status = "partial" if run["llm"]["failures"] else "complete"
    config: dict[str, object] = {
        "seed": cfg.seed, "preset": cfg.preset, "personas": cfg.personas, "turns": cfg.turns, "drifts": cfg.drifts,
        "qa": cfg.qa_per_persona, "traits": cfg.traits, "transition_frac": cfg.transition_frac,
        "post_change_frac": cfg.post_change_frac, "cue_rate": cfg.cue_rate,
        "maintenance_cue_rate": cfg.maintenance_cue_rate, "confounder_rate": cfg.confounder_rate,
        "backends": {"generator": run["backend"], "verifier": None},
    }
    if cfg.qa_rules != "v1":  # recorded only when set, so v1 manifests keep their bytes
        config["qa_rules"] = cfg.qa_rules
    from dimobench.catalog import catalog_record

    made_from = catalog_record()
    if made_from is not None:  # likewise: only a catalog other than the packaged default is recorded
        config["catalog"] = made_from
    mode = _json_mode(llm)
    if mode not in (None, "json_schema"):  # likewise: manifests of strict servers keep their bytes
        config["json_mode"] = mode
    manifest = write_suite(out, {"personas.jsonl": personas, "schedules.jsonl": schedules,
                                 "dialogues.jsonl": turns, "qa.jsonl": qa},
                           {"status": "incomplete" if verify or audit else status,
                            "dimobench_version": __version__, "config": config,
                            "counts": counts(personas, turns, qa), "stages": stage_records(run["fingerprints"],
                                                                                 run["versions"])})
    if carried is not None and set(carried[0]) <= {q.qa_id for q in qa}:
        manifest = _update_manifest(out, files={"human_verdicts.jsonl": None}, counts={"human_verdicts": carried[1]})
    atomic_write_text(out / "README.md", render_card(manifest))
    if verify:
        from dimobench.verify import verify_suite

        if progress:
            progress("verify", "running")
        verify_suite(out, cfg.verifier, base_url=options.base_url, cache_dir=options.cache_dir,
                     concurrency=options.concurrency, timeout=options.timeout, resume=resume)
        if progress:
            progress("verify", "done")
    if audit:
        if progress:
            progress("audit", "running")
        from dimobench.audit import audit_suites
        from dimobench.audit.card import summary

        with tempfile.TemporaryDirectory(prefix="dimobench-reference-") as tmp:
            # An LLM wrote the text: offline references would teach attacks on text it did not write, and read
            # low, so such a suite keeps leave-one-persona-out, which reads high (a failed gate, not a missed leak).
            train = _reference_suites(cfg, tmp) if run["llm"] is None else []
            manifest = _update_manifest(out, audit=summary(audit_suites([out], train=train)))
        if progress:
            progress("audit", "done")
    if verify or audit:
        manifest = _update_manifest(out, status=status)
    return manifest


REFERENCE_SUITES = 3
"""How many suites of other seeds ``generate``'s audit trains the learned attacks on."""


def reference_seeds(seed: int, n: int = REFERENCE_SUITES) -> list[int]:
    """The seeds of a suite's reference suites: fixed by its seed and never equal to it."""
    return [seed + 7_919 * (k + 1) for k in range(n)]


def _reference_suites(cfg: GenerateConfig, folder: str | Path, n: int = REFERENCE_SUITES) -> list[Path]:
    """Suites like ``cfg``'s but of other seeds, written offline into ``folder`` (a temporary one of ours), for
    the learned attacks to train on.

    Leave-one-persona-out training over-reads: the generator balances golds across a suite, so what a suite's
    other personas teach is tilted against the held-out one, and a model fitted on that tilt scores above
    chance where no leak is (seeds 1461-1465: combined 0.347 pooled against 0.246 when trained on other
    suites; docs/measurements.md, "Session 17"). Suites of other seeds are what an attacker really learns from, and the
    relabelling null is right for an attack so trained. Offline only: an LLM-written suite is not audited this
    way (see the caller)."""
    import hashlib
    import os

    # one sub-folder per config and catalog: two audited suites of one seed made otherwise need their own
    key = hashlib.sha256(f"{cfg.model_dump_json()}|{os.environ.get('DIMOBENCH_CATALOG', '')}".encode()).hexdigest()
    paths = []
    for seed in reference_seeds(cfg.seed, n):
        path = Path(folder) / key[:12] / f"reference-seed-{seed}"
        if not path.exists():  # two audited suites may share a reference
            generate_suite(cfg.model_copy(update={"seed": seed}), path)
        paths.append(path)
    return paths


def _human_verdicts(out: Path) -> tuple[list[str], object] | None:
    """The question ids and counts ``review merge`` wrote into the suite at ``out`` (kept across
    ``generate --resume``), or None."""
    from dimobench.suite.io import read_jsonl

    path, manifest_path = out / "human_verdicts.jsonl", out / "manifest.json"
    if not path.is_file() or not manifest_path.is_file():
        return None
    old = Manifest.model_validate_json(manifest_path.read_text(encoding="utf-8"))
    if "human_verdicts.jsonl" not in old.files:
        return None
    return [str(rec.get("qa_id")) for _, rec in read_jsonl(path)], old.counts.get("human_verdicts", {})


def _update_manifest(out: Path, files: dict[str, None] | None = None, counts: dict[str, object] | None = None,
                     **fields: object) -> Manifest:
    """Rewrite ``out/manifest.json`` with ``fields`` set, ``files`` re-hashed, ``counts`` merged; refresh README."""
    import json

    from dimobench.suite.io import sha256_file

    data = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    data.update(fields)
    data["files"] = {**data["files"], **{name: sha256_file(out / name) for name in files or {}}}
    data["counts"] = {**data["counts"], **(counts or {})}
    manifest = Manifest.model_validate(data)
    atomic_write_text(out / "manifest.json", json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(out / "README.md", render_card(manifest))
    return manifest


def last_run(out: str | Path) -> dict[str, object] | None:
    """The latest LLM run's totals and failures from ``out/.dimobench/`` (None for an offline suite)."""
    from dimobench.backends.jobs import last_event
    from dimobench.generate.rewrite import FAILURES

    return last_event(out, "generate", failures=FAILURES)


def verify_suite(path: str | Path, verifier: str = "offline", only: list[str] | None = None, *,
                 write: bool = True, plan_checks: str = "auto", **llm_options: Any) -> VerifyResult:
    """Judge every item of the suite at ``path`` on the six criteria (stage 6) and record the verdicts.

    ``verifier`` is ``offline`` (text and latent-plan checks with MiniLM) or an LLM (``openai[/MODEL]``,
    ``gemini[/MODEL]``, with ``base_url``, ``cache_dir``, ``concurrency``, ``resume`` ... in ``llm_options``).
    ``plan_checks`` (offline): ``auto``, ``on``, ``off``: reject the items the latent plan flags
    (``dimobench.suite.flags``); ``auto`` does for ``--qa-rules valid`` suites.
    """
    from dimobench.verify import verify_suite as run

    return run(path, verifier, only, write=write, plan_checks=plan_checks, **llm_options)


def audit_suite(suites: Sequence[str | Path] | str | Path, *, train: Sequence[str | Path] = (),
                against: Sequence[str | Path] = (), gates: dict[str, float] | None = None,
                out: str | Path | None = None, reference: int | None = 0) -> AuditReport:
    """The validity card of one or more suites: no-context attacks, shortcut baselines, flags, lints, diversity.

    ``train`` suites (other seeds) teach the learned attacks; ``reference=N`` instead generates N offline suites
    of other seeds from the config each audited suite's manifest records (:func:`reference_seeds`, what
    ``generate``'s card trains on; ``ConfigError`` for an imported or LLM-written suite); with neither, each
    persona is attacked with what the suite's other personas teach, which reads high on a generated suite.
    ``reference=None`` (the CLI's default) picks: :data:`REFERENCE_SUITES` when no ``train`` is given and every
    suite was generated offline, so the card says what ``generate``'s said, else leave-one-persona-out.
    ``gates`` override the default limits by name.
    """
    from dimobench.audit import audit_suites
    from dimobench.errors import ConfigError

    paths = [suites] if isinstance(suites, str | Path) else list(suites)
    if reference is None:
        from dimobench.generate.remake import made_now, remake_problem

        remade = not train and all(remake_problem(Path(p)) is None and made_now(Path(p)) for p in paths)
        reference = REFERENCE_SUITES if remade else 0
    if reference < 0:
        raise ConfigError(f"--reference {reference}: must be 0 or more")
    if not reference:
        return audit_suites(paths, train=train, against=against, gates=gates, out=out)
    if train:
        raise ConfigError("--reference and --train: give one of them")
    with tempfile.TemporaryDirectory(prefix="dimobench-reference-") as tmp:
        refs: list[Path] = []
        for path in paths:
            refs += _reference_suites_of(Path(path), Path(tmp), reference, set(refs))
        return audit_suites(paths, train=refs, against=against, gates=gates, out=out)


def _reference_suites_of(suite: Path, folder: Path, n: int, made: set[Path]) -> list[Path]:
    """The reference suites of a generated suite, from the config and catalog its manifest records."""
    import os

    from dimobench.catalog import find_catalog
    from dimobench.errors import ConfigError
    from dimobench.generate.remake import recorded_config, remake_problem

    problem = remake_problem(suite)
    if problem is not None:
        raise ConfigError(problem)
    cfg, recorded = recorded_config(suite)
    catalog = find_catalog(recorded) if recorded is not None else None
    before = os.environ.get("DIMOBENCH_CATALOG")
    if catalog is not None:  # the generator reads the catalog from the environment, as `generate --catalog` sets it
        os.environ["DIMOBENCH_CATALOG"] = str(catalog)
    elif recorded is None:
        os.environ.pop("DIMOBENCH_CATALOG", None)  # a suite that records none was made from the packaged one
    try:
        return [p for p in _reference_suites(cfg, folder, n) if p not in made]
    finally:
        if before is None:
            os.environ.pop("DIMOBENCH_CATALOG", None)
        else:
            os.environ["DIMOBENCH_CATALOG"] = before


def sample_review(suite: str | Path, out: str | Path, *, frac: float = 0.2, annotators: int = 2,
                  names: Sequence[str] | None = None, calibration: int = 30, seed: int = 0,
                  force: bool = False) -> tuple[Sample, list[Path]]:
    """Draw a stratified sample of a suite for human review and write one blind sheet per annotator."""
    from dimobench.review import sample_suite

    return sample_suite(Path(suite), Path(out), frac=frac, annotators=annotators, names=names,
                        calibration=calibration, seed=seed, force=force)


def score_review(sheets: Sequence[str | Path], out: str | Path, *, suite: str | Path | None = None,
                 min_kappa: float = 0.75) -> dict[str, Any]:
    """Cohen's kappa per criterion and for the verdict (alpha for three or more sheets), written to ``out``."""
    from dimobench.review import score_sheets

    return score_sheets([Path(s) for s in sheets], Path(out), Path(suite) if suite else None, min_kappa)


def evaluate(cfg: EvalConfig, out: str | Path, progress: EvalProgressFn | None = None) -> EvalReport:
    """Score every system of ``cfg`` on every suite; writes answers, ``report.json``, ``report.md`` and plots."""
    from dimobench.evaluate.api import evaluate as run

    return run(cfg, out, progress)


def compare(report_a: str | Path, report_b: str | Path, n: int = 1000, seed: int = 0,
            out: str | Path | None = None, *, force: bool = False) -> dict[str, Any]:
    """Per system in both reports: ``B - A`` accuracy on their shared questions, paired bootstrap interval;
    with ``out``, also ``out/report.html`` showing both runs side by side."""
    from dimobench.evaluate.api import compare as run

    return run(report_a, report_b, n, seed, out, force=force)


def merge_shards(shards: Sequence[str | Path], out: str | Path, *, force: bool = False) -> EvalReport:
    """Join the folders of one ``evaluate --shard i/n`` split into the evaluation a single run writes in ``out``.

    Raises:
        ShardError: the folders are not the n finished shards of one evaluation (settings, suites, indexes).
    """
    from dimobench.evaluate.merge import merge as run

    return run([Path(p) for p in shards], out, force=force)


def export_suite(suite: str | Path, out: str | Path, format: str = "hf", force: bool = False) -> ExportResult:
    """Export a suite for publishing; ``hf``: one Parquet file per record file and a Hugging Face dataset card.

    Args:
        suite: The suite folder (it must load, validate and be finished).
        out: Folder to write: empty, absent, or an earlier export (replaced only with ``force``).
        format: Only ``hf`` for now.
        force: Replace an earlier export in ``out``.

    Returns:
        The files written (relative to ``out``) and the row count of every config.
    """
    from dimobench.export import export_suite as run

    return run(suite, out, format, force)
