"""Kill a real ``dimobench`` process halfway through its LLM calls, to test that a resumed run repeats only the
calls that were in flight."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from tests.helpers.fakeserver import FakeLLMServer


def kill_halfway(cmd: list[str], srv: FakeLLMServer, total: int) -> int:
    """Start ``cmd``, SIGKILL it once ``srv`` has seen half of ``total`` calls; the calls seen by then."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while srv.count < total // 2 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return srv.count
