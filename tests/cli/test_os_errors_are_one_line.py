"""An operating-system failure mid-run (a full disk) is one line and exit 2, and leaves no half-written file."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest


def test_a_full_disk_is_one_line_exit_2_and_no_temp_file_is_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from dimobench.cli import app as cli
    from dimobench.suite import io

    real_fsync = os.fsync
    calls = {"n": 0}

    def full_disk(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] > 2:  # the marker and the first stage files fit; then the disk is full
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(io.os, "fsync", full_disk)
    out = tmp_path / "s"
    monkeypatch.setattr(sys, "argv", ["dimobench", "generate", "--turns", "60", "--personas", "1", "--no-verify",
                                      "--no-audit", "--out", str(out)])
    with pytest.raises(SystemExit) as ended:
        cli.main()
    assert ended.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("dimobench: error: No space left on device") and "Traceback" not in "\n".join(err)
    assert not [p for p in out.rglob("*.tmp")]  # atomic writes removed their temp files
    assert not (out / "manifest.json").exists()
