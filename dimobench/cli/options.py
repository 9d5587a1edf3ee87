"""Command-line options that several commands share (generate, verify, evaluate), declared once.

Counts and sizes are checked here, by the option's callback, so that ``--concurrency 0`` or ``--timeout -5``
is one ``dimobench: error:`` line and exit 2 like every other user error (not a traceback or a usage box).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional, TypeVar

import typer

N = TypeVar("N", int, float)


def at_least(flag: str, low: float, *, exclusive: bool = False) -> Callable[[N | None], N | None]:
    """An option callback refusing values below ``low`` (or equal to it, with ``exclusive``) in one line."""

    def check(value: N | None) -> N | None:
        if value is not None and (value < low or (exclusive and value == low)):
            bound = f"more than {low:g}" if exclusive else f"at least {low:g}"
            typer.echo(f"dimobench: error: {flag} must be {bound} (got {value:g})", err=True)
            raise typer.Exit(2)
        return value

    return check


BaseUrl = Annotated[Optional[str], typer.Option(help="OpenAI-compatible server (or Gemini endpoint) URL.",  # noqa: UP045
                                                envvar="DIMOBENCH_BASE_URL")]
CacheDir = Annotated[Optional[Path], typer.Option(help="LLM reply cache (default: the user cache dir).",  # noqa: UP045
                                                  envvar="DIMOBENCH_CACHE_DIR")]
Concurrency = Annotated[int, typer.Option(help="LLM calls in flight at once.", envvar="DIMOBENCH_CONCURRENCY",
                                          callback=at_least("--concurrency", 1))]
BatchPoll = Annotated[float, typer.Option(help="Seconds between batch status checks.", envvar="DIMOBENCH_BATCH_POLL",
                                          callback=at_least("--batch-poll", 0, exclusive=True))]
Timeout = Annotated[Optional[float], typer.Option(  # noqa: UP045
    metavar="SECONDS", envvar="DIMOBENCH_TIMEOUT", callback=at_least("--timeout", 0, exclusive=True),
    help="Total seconds (wall clock) the run's LLM calls may take; past it the run stops, keeping finished calls "
         "(default: no limit; a server that is not there fails within seconds anyway).")]


JsonMode = Annotated[str, typer.Option(
    "--json-mode", envvar="DIMOBENCH_JSON_MODE", metavar="MODE",
    help="How every LLM role asks for JSON: json_schema (the server enforces the schema: OpenAI, Gemini, vLLM, "
         "llama.cpp, Ollama), json_object (JSON only, schema in the prompt), prompt (schema in the prompt, for "
         "servers without structured output such as transformers serve) or auto (one probe call decides).")]


@contextmanager
def time_budget(timeout: float | None, rerun: str, json_mode: str | None = None) -> Iterator[None]:
    """The run's ``--timeout`` budget and ``--json-mode``; ``rerun`` ends the line of a run that gave up.

    An unknown ``json_mode`` is one ``dimobench: error:`` line and exit 2.
    """
    from dimobench.backends import jsonmode, progress  # light: the backends load inside the command
    from dimobench.backends.limits import run_limits

    if json_mode is not None and json_mode not in jsonmode.MODES:
        typer.echo(f"dimobench: error: --json-mode {json_mode!r}: choose one of {', '.join(jsonmode.MODES)}",
                   err=True)
        raise typer.Exit(2)
    with run_limits(timeout, rerun), jsonmode.json_mode(json_mode), progress.tracking(_terminal_line()):
        yield


def _terminal_line() -> Callable[[str], None] | None:
    """Where the calls-done line goes while a command runs: rewritten in place on a terminal (at most twice a
    second), nowhere when stderr is captured (tests, pipes, CI logs), so no output changes there."""
    import sys
    import time

    if not sys.stderr.isatty():
        return None
    last = [0.0]

    def show(line: str) -> None:
        if time.monotonic() - last[0] >= 0.5:
            last[0] = time.monotonic()
            sys.stderr.write(f"\r\033[K{line}")
            sys.stderr.flush()

    return show
