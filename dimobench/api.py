"""The library API the CLI calls and users import."""

from __future__ import annotations

from pathlib import Path

from dimobench import __version__
from dimobench.card import render_card
from dimobench.config import GenerateConfig
from dimobench.jsonl import atomic_write_text
from dimobench.pipeline import ProgressFn, prepare_out, run_stages, stage_records
from dimobench.schema import Manifest
from dimobench.suite import Suite, counts, load_suite, write_suite
from dimobench.validate import validate_suite

__all__ = ["GenerateConfig", "Suite", "generate_suite", "load_suite", "validate_suite"]


def generate_suite(cfg: GenerateConfig, out: str | Path, *, force: bool = False, resume: bool = False,
                   progress: ProgressFn | None = None) -> Manifest:
    """Generate a suite into ``out`` and return its manifest.

    Same config and seed give byte-identical ``manifest.json`` and ``*.jsonl``; run state lives in
    ``out/.dimobench/``. Raises ``ConfigError`` for settings that cannot work and for a non-empty ``out``
    without ``force`` or ``resume``; nothing is written in those cases.
    """
    cfg = cfg.check()
    out = Path(out)
    prepare_out(out, force=force, resume=resume)
    run = run_stages(cfg, out, progress)
    res = run["results"]
    personas, schedules = res["personas"].personas, res["drift"].schedules
    turns, qa = res["confounders"].turns, res["qa"].qa
    config = {
        "seed": cfg.seed, "preset": cfg.preset, "personas": cfg.personas, "turns": cfg.turns, "drifts": cfg.drifts,
        "qa": cfg.qa_per_persona, "traits": cfg.traits, "transition_frac": cfg.transition_frac,
        "post_change_frac": cfg.post_change_frac, "cue_rate": cfg.cue_rate,
        "maintenance_cue_rate": cfg.maintenance_cue_rate, "confounder_rate": cfg.confounder_rate,
        "backends": {"generator": run["backend"], "verifier": None},
    }
    manifest = write_suite(out, {"personas.jsonl": personas, "schedules.jsonl": schedules,
                                 "dialogues.jsonl": turns, "qa.jsonl": qa},
                           {"status": "complete", "dimobench_version": __version__, "config": config,
                            "counts": counts(personas, turns, qa), "stages": stage_records(run["fingerprints"])})
    atomic_write_text(out / "README.md", render_card(manifest))
    return manifest
