"""Command-line options that several commands share (generate, verify, evaluate), declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

BaseUrl = Annotated[Optional[str], typer.Option(help="OpenAI-compatible server (or Gemini endpoint) URL.",  # noqa: UP045
                                                envvar="DIMOBENCH_BASE_URL")]
CacheDir = Annotated[Optional[Path], typer.Option(help="LLM reply cache (default: the user cache dir).",  # noqa: UP045
                                                  envvar="DIMOBENCH_CACHE_DIR")]
Concurrency = Annotated[int, typer.Option(help="LLM calls in flight at once.", envvar="DIMOBENCH_CONCURRENCY")]
BatchPoll = Annotated[float, typer.Option(help="Seconds between batch status checks.", envvar="DIMOBENCH_BATCH_POLL")]
