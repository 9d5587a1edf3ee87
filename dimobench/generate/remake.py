"""Whether a suite on disk can be generated again as it was: what the audit's reference suites rest on.

A suite dimobench generated offline records its config, its catalog and each stage's fingerprint in its manifest;
from them the same generator writes suites of other seeds like it (``audit --reference``, ``generate``'s card).
"""

from __future__ import annotations

import json
from pathlib import Path

from dimobench.catalog import Catalog, find_catalog, load_catalog
from dimobench.generate.config import GenerateConfig
from dimobench.generate.pipeline import fingerprints
from dimobench.resources import resource_dir
from dimobench.suite.load import load_suite


def recorded_config(suite: Path) -> tuple[GenerateConfig, str | None]:
    """The generation config ``suite``'s manifest records, and the catalog it names (None: the packaged one)."""
    config = dict(load_suite(suite).manifest.config)
    cfg = GenerateConfig.model_validate({k: v for k, v in config.items()
                                         if k in GenerateConfig.model_fields and k not in ("generator", "verifier")})
    recorded = config.get("catalog")
    return cfg, recorded if isinstance(recorded, str) and recorded else None


def remake_problem(suite: Path) -> str | None:
    """Why suites like ``suite`` cannot be generated again offline (imported, LLM-written, catalog gone), or
    None when they can."""
    manifest = load_suite(suite).manifest
    backends = manifest.config.get("backends")
    generator = backends.get("generator") if isinstance(backends, dict) else None
    if manifest.status == "imported" or generator != "offline":
        return (f"{suite}: --reference needs a suite dimobench generated offline (this one is "
                f"{'imported' if manifest.status == 'imported' else f'written by {generator}'}); "
                "give --train suites instead")
    _, recorded = recorded_config(suite)
    if recorded is not None and find_catalog(recorded) is None:
        return f"{suite}: made from catalog {recorded!r}, which is not there"
    return None


def made_now(suite: Path) -> bool:
    """Whether this code and the catalog on disk give the stage fingerprints ``suite``'s manifest records: only
    then are reference suites made now like it (an older catalog's suite trained on the new catalog's text would
    read low, where leave-one-persona-out reads high)."""
    cfg, recorded = recorded_config(suite)
    where = find_catalog(recorded) if recorded is not None else resource_dir("data")
    if where is None:
        return False
    catalog: Catalog = load_catalog(str(where))
    stages = json.loads((suite / "manifest.json").read_text(encoding="utf-8")).get("stages") or {}
    return all(isinstance(stages.get(name), dict) and stages[name].get("fingerprint") == fp
               for name, fp in fingerprints(cfg, catalog).items())
