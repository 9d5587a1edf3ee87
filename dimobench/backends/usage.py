"""Token and cost accounting for a run, and the price table behind estimates.

Prices are USD per million tokens (input, output), list prices as we last knew them; they are estimates for
``--dry-run`` and the run log, never billing. Unknown models (local servers) cost nothing in the estimate.
Calls made through a provider's batch API are priced at :data:`BATCH_PRICE_FACTOR` of the synchronous price.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dimobench.backends import progress
from dimobench.backends.base import CallFailed

if TYPE_CHECKING:
    from dimobench.backends.base import ChatLLM, Request, Response

PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gemini-2.5-pro": (1.25, 10.00),
    "gemini-2.5-flash": (0.30, 2.50),
}

BATCH_PRICE_FACTOR: dict[str, float] = {"openai": 0.5}
"""provider -> share of the synchronous price a batch-API call costs (OpenAI's Batch API: half price)."""


def cost_usd(spec: str, input_tokens: int, output_tokens: int, batch: bool = False) -> float | None:
    """Estimated cost of ``spec`` (``provider/model``); None when the model's price is unknown.

    ``batch=True`` prices the tokens at the provider's batch-API rate.
    """
    provider, _, model = spec.partition("/")
    price = PRICES.get(model)
    if price is None:
        return None
    factor = BATCH_PRICE_FACTOR.get(provider, 1.0) if batch else 1.0
    return round((input_tokens * price[0] + output_tokens * price[1]) * factor / 1e6, 6)


@dataclass
class Ledger:
    """Counts for one run; thread-safe."""

    spec: str
    calls: int = 0
    """Calls sent to the provider (cache hits excluded; retries are counted in ``attempts``)."""
    cache_hits: int = 0
    attempts: int = 0
    failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    batch_calls: int = 0
    """Of ``calls``, those answered through the provider's batch API (their tokens are in ``batch_tokens``)."""
    batch_tokens: tuple[int, int] = (0, 0)
    """Input and output tokens of the batch calls (also counted in ``input_tokens``/``output_tokens``)."""
    json_mode: str | None = None
    """The structured-output mode the calls went out in, when not the default ``json_schema``."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, *, cached: bool, attempts: int, input_tokens: int = 0, output_tokens: int = 0,
               failed: bool = False, batch: bool = False) -> None:
        """Add one call, cache hit or failure and its tokens to the totals (locked: calls may run concurrently)."""
        with self._lock:
            if batch:
                self.batch_calls += 1
                self.batch_tokens = (self.batch_tokens[0] + input_tokens, self.batch_tokens[1] + output_tokens)
            if cached:
                self.cache_hits += 1
            else:
                self.calls += 1
                self.attempts += attempts
            self.failures += int(failed)
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens

    def bill(self, input_tokens: int, output_tokens: int, batch: bool = False) -> None:
        """Add tokens a provider billed for a reply that was then thrown away, without counting a call."""
        with self._lock:
            if batch:
                self.batch_tokens = (self.batch_tokens[0] + input_tokens, self.batch_tokens[1] + output_tokens)
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens

    def call(self, llm: ChatLLM, request: Request) -> Response:
        """``llm.complete(request)``, counted here: a failed call is counted, then re-raised for the caller."""
        tracker, clock = progress.current(), progress.timed()
        try:
            resp = llm.complete(request)
        except Exception as exc:
            # a CallFailed's attempts got replies, and the provider bills them whether or not they parsed
            failed = exc if isinstance(exc, CallFailed) else CallFailed("")
            self.record(cached=False, attempts=failed.attempts, failed=True, input_tokens=failed.usage.input_tokens,
                        output_tokens=failed.usage.output_tokens)
            if tracker is not None:
                tracker.record(ok=False, cached=False, seconds=clock())
            raise
        finally:
            mode = getattr(llm, "json_mode", None)
            if isinstance(mode, str) and mode not in ("json_schema", "auto"):
                self.json_mode = mode
        self.record(cached=resp.cached, attempts=resp.attempts, input_tokens=resp.usage.input_tokens,
                    output_tokens=resp.usage.output_tokens)
        if tracker is not None:
            tracker.record(ok=True, cached=resp.cached, seconds=clock())
        return resp

    def summary(self) -> dict[str, object]:
        """Totals; ``batch_calls`` appears only when some call went through a batch API."""
        with self._lock:
            out: dict[str, object] = {"generator": self.spec, "calls": self.calls, "cache_hits": self.cache_hits,
                                      "attempts": self.attempts, "failures": self.failures,
                                      "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                                      "cost_usd_estimate": self._cost()}
            if self.batch_calls:
                out["batch_calls"] = self.batch_calls
            if self.json_mode:
                out["json_mode"] = self.json_mode
            return out

    def _cost(self) -> float | None:
        b_in, b_out = self.batch_tokens
        sync = cost_usd(self.spec, self.input_tokens - b_in, self.output_tokens - b_out)
        if sync is None or not self.batch_calls:
            return sync
        return round(sync + (cost_usd(self.spec, b_in, b_out, batch=True) or 0.0), 6)
