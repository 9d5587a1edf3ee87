"""``python -m dimobench ...`` as users run it: a real process with a fixed terminal width."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m dimobench ...`` as a real process (stdout and stderr captured as text)."""
    env = {**os.environ, "COLUMNS": "120"}
    return subprocess.run([sys.executable, "-m", "dimobench", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120)
