"""Token and cost accounting for a run, and the price table behind estimates.

Prices are USD per million tokens (input, output), list prices as we last knew them; they are estimates for
``--dry-run`` and the run log, never billing. Unknown models (local servers) cost nothing in the estimate.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gemini-2.5-pro": (1.25, 10.00),
    "gemini-2.5-flash": (0.30, 2.50),
}


def cost_usd(spec: str, input_tokens: int, output_tokens: int) -> float | None:
    """Estimated cost of ``spec`` (``provider/model``); None when the model's price is unknown."""
    price = PRICES.get(spec.partition("/")[2])
    if price is None:
        return None
    return round((input_tokens * price[0] + output_tokens * price[1]) / 1e6, 6)


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
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, *, cached: bool, attempts: int, input_tokens: int = 0, output_tokens: int = 0,
               failed: bool = False) -> None:
        with self._lock:
            if cached:
                self.cache_hits += 1
            else:
                self.calls += 1
                self.attempts += attempts
            self.failures += int(failed)
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens

    def summary(self) -> dict[str, object]:
        with self._lock:
            return {"generator": self.spec, "calls": self.calls, "cache_hits": self.cache_hits,
                    "attempts": self.attempts, "failures": self.failures, "input_tokens": self.input_tokens,
                    "output_tokens": self.output_tokens,
                    "cost_usd_estimate": cost_usd(self.spec, self.input_tokens, self.output_tokens)}
