"""The generation pipeline: stages run in order, each fingerprinted, outputs written atomically.

A stage's fingerprint is sha256 of its VERSION, the config fields that change its output, the catalog hash
and its upstream fingerprints (STYLE.md convention 7). Finished stages are kept in ``<out>/.dimobench/`` with
their fingerprint, so ``--resume`` skips every stage whose fingerprint still matches and reruns the first
that changed and everything after it. Stage 6 (verification) comes with ``dimobench verify``.
"""

from __future__ import annotations

import gc
import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from dimobench.backends import LLM, resolve_backend
from dimobench.backends.jobs import STATE_DIR, read_state
from dimobench.catalog import Catalog, load_catalog
from dimobench.errors import InputError
from dimobench.generate.config import GenerateConfig, newer_rules
from dimobench.generate.stages import confounders, dialogue, drift, personas, qa
from dimobench.rng import derive_rng
from dimobench.suite.io import atomic_write_text

STAGES = (personas, drift, dialogue, confounders, qa)
"""Stages 1-5 in order; each module exports NAME, VERSION, READS, WRITES and run()."""
PER_PERSONA = (dialogue, confounders, qa)
"""The stages whose run() takes ``workers`` (:mod:`dimobench.generate.parallel`)."""

ProgressFn = Callable[[str, str], None]


_HASHED: dict[int, tuple[tuple[int, ...], Catalog, str]] = {}
"""id(catalog) -> (the ids of its field values, the catalog, its hash): hashing catalog-v3 takes ~0.4 s, and one
process may generate many suites (the catalog is held, so its id is not reused while it is remembered)."""


def catalog_hash(catalog: Catalog) -> str:
    """sha256 of the catalog's JSON: the upstream of the first fingerprint, so a catalog edit reruns every stage.
    Remembered per catalog object and field values (a ``model_copy`` with other values is hashed anew)."""
    values = tuple(id(getattr(catalog, name)) for name in type(catalog).model_fields)
    known = _HASHED.get(id(catalog))
    if known is None or known[0] != values:
        if len(_HASHED) >= 8:
            _HASHED.clear()
        known = _HASHED[id(catalog)] = (values, catalog,
                                        hashlib.sha256(catalog.canonical_json().encode()).hexdigest())
    return known[2]


def stage_versions(cfg: GenerateConfig, catalog: Catalog) -> dict[str, str]:
    """Each stage's version for this config and catalog: ``TEXT_RULES_VERSION`` where a stage has one and the
    catalog has text rules v3 (what only such catalogs change), else ``RULES_VERSION`` where a stage has one and
    the suite follows the validity rules or a catalog of text rules v3 (what those versions changed), else
    ``VERSION``, so the suites of the default rules and the v1/v2 catalogs keep their fingerprints and manifests
    byte for byte, and a v1/v2 suite of the validity rules keeps its own."""
    newer = newer_rules(cfg.qa_rules, catalog.text_rules)

    def version(stage: Any) -> str:
        if catalog.text_rules == "v3" and hasattr(stage, "TEXT_RULES_VERSION"):
            return str(stage.TEXT_RULES_VERSION)
        return str(getattr(stage, "RULES_VERSION", stage.VERSION)) if newer else str(stage.VERSION)

    return {s.NAME: version(s) for s in STAGES}


def fingerprints(cfg: GenerateConfig, catalog: Catalog) -> dict[str, str]:
    """Fingerprint of every stage: its version (:func:`stage_versions`), its CONFIG_FIELDS values and its upstream
    fingerprint."""
    settings = cfg.model_dump()
    settings["qa"] = cfg.qa_per_persona
    upstream = catalog_hash(catalog)
    versions = stage_versions(cfg, catalog)
    out = {}
    for stage in STAGES:
        # qa_rules joined the fingerprint later: at its default it is left out, so v1 suites keep theirs
        config = {k: settings[k] for k in stage.CONFIG_FIELDS if not (k == "qa_rules" and settings[k] == "v1")}
        payload = json.dumps({"stage": stage.NAME, "version": versions[stage.NAME], "upstream": upstream,
                              "config": config}, sort_keys=True)
        upstream = out[stage.NAME] = hashlib.sha256(payload.encode()).hexdigest()
    return out


def run_stages(cfg: GenerateConfig, out: Path, progress: ProgressFn | None = None, llm: LLM | None = None,
               concurrency: int = 8, workers: int = 1) -> dict[str, Any]:
    """Run stages 1-5 into ``out``'s state folder; return the final outputs and the stage records. ``workers``:
    processes writing personas at once in stages 3-5 (:mod:`dimobench.generate.parallel`; same bytes).

    With an LLM generator the offline text is then rewritten by :mod:`dimobench.generate.rewrite` (``results``
    gains ``llm``: the rewritten personas, turns and questions, failures and totals).
    """
    catalog = load_catalog()
    llm = llm if llm is not None else resolve_backend(cfg.generator)
    prints = fingerprints(cfg, catalog)
    state = out / STATE_DIR
    results: dict[str, BaseModel] = {}
    stale = False
    for stage in STAGES:
        record = state / f"{stage.NAME}.json"
        cached = _load_done(record, prints[stage.NAME]) if not stale else None
        if cached is not None:
            try:
                results[stage.NAME] = stage.Output.model_validate(cached)
            except ValidationError as exc:
                err = exc.errors()[0]
                raise InputError(f"damaged run state, {err['msg'].lower()} (delete it to redo that step, or use "
                                 "--force)", record, None, ".".join(map(str, ("output", *err["loc"])))) from None
            _say(progress, stage.NAME, "kept (fingerprint matches)")
            continue
        stale = True  # everything downstream of a rerun stage reruns too
        _say(progress, stage.NAME, "running")
        inputs = _inputs(stage, catalog, results)
        with _collector_paused():
            output = (stage.run(cfg, inputs, derive_rng(cfg.seed, stage.NAME), workers) if stage in PER_PERSONA
                      else stage.run(cfg, inputs, derive_rng(cfg.seed, stage.NAME)))
        results[stage.NAME] = output
        atomic_write_text(record, json.dumps({"fingerprint": prints[stage.NAME], "output": output.model_dump(
            mode="json", exclude_unset=True)}, ensure_ascii=False))
        _say(progress, stage.NAME, "done")
    run: dict[str, Any] = {"results": results, "fingerprints": prints, "versions": stage_versions(cfg, catalog),
                           "backend": llm.spec, "llm": None}
    if hasattr(llm, "complete"):
        from dimobench.generate import rewrite

        _say(progress, rewrite.NAME, "running")
        res: Any = results
        run["llm"] = rewrite.rewrite_text(cfg.seed, catalog, res["personas"].personas, res["confounders"].turns,
                                       res["qa"].qa, llm, state, concurrency)  # type: ignore[arg-type]
        prints[rewrite.NAME] = rewrite.fingerprint(llm.spec, prints[STAGES[-1].NAME])
        _say(progress, rewrite.NAME, "done")
    return run


@contextmanager
def _collector_paused() -> Iterator[None]:
    """A stage allocates millions of small objects and frees nearly all of them by reference counting; the cyclic
    collector's passes over everything alive (the catalog's models among it) cost 10-20% of an XL suite, so it
    waits until the stage is done (and collects then, if it was on)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _load_done(record: Path, fingerprint: str) -> dict[str, Any] | None:
    data = read_state(record)  # damaged: InputError naming the file, not a traceback or a silent rerun
    if data is None or data.get("fingerprint") != fingerprint:
        return None
    if not isinstance(data.get("output"), dict):
        raise InputError("damaged run state, no output object (delete it to redo that step, or use --force)",
                         record)
    return data["output"]


def _inputs(stage: Any, catalog: Catalog, results: dict[str, BaseModel]) -> Any:
    if stage is personas:
        return catalog
    got: dict[str, Any] = {"catalog": catalog}
    got["personas"] = results["personas"].personas  # type: ignore[attr-defined]
    if "drift" in results:
        got["schedules"] = results["drift"].schedules  # type: ignore[attr-defined]
    if stage is confounders:
        got["turns"] = results["dialogue"].turns  # type: ignore[attr-defined]
        got["used_user"] = results["dialogue"].used_user  # type: ignore[attr-defined]
    if stage is qa:
        got["turns"] = results["confounders"].turns  # type: ignore[attr-defined]
    fields = stage.Inputs.model_fields
    return stage.Inputs(**{k: v for k, v in got.items() if k in fields})


def _say(progress: ProgressFn | None, stage: str, what: str) -> None:
    if progress:
        progress(stage, what)


def stage_records(prints: dict[str, str], versions: dict[str, str]) -> dict[str, dict[str, str]]:
    """The manifest's ``{version, fingerprint}`` per stage, ``llm_render`` included when it ran."""
    records = {s.NAME: {"version": versions[s.NAME], "fingerprint": prints[s.NAME]} for s in STAGES}
    if "llm_render" in prints:
        from dimobench.generate import rewrite

        records[rewrite.NAME] = {"version": rewrite.VERSION, "fingerprint": prints[rewrite.NAME]}
    return records

