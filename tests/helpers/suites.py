"""Build the offline suites the session fixtures share (``conftest.py`` files wrap these in fixtures)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def generate(out: Path, preset: str | None = None, workers: int | None = None, **options: object) -> Path:
    """Generate an offline suite into ``out`` from ``make_config(preset, **options)`` (in process, ``workers``
    processes writing personas, default as ``generate``'s); ``out``."""
    from dimobench.api import generate_suite
    from dimobench.generate.config import RunOptions, make_config

    generate_suite(make_config(preset, **options), out, options=RunOptions(workers=workers))
    return out


def generate_with_cli(out: Path, turns: int) -> Path:
    """A 1-persona, 1-drift offline suite of ``turns`` turns, made by ``dimobench generate`` as a real process."""
    r = subprocess.run([sys.executable, "-m", "dimobench", "generate", "--personas", "1", "--turns", str(turns),
                        "--drifts", "1", "--no-verify", "--out", str(out)], capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stderr
    return out
