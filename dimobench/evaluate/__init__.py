"""Evaluating memory systems on drift suites: the system protocol, built-in systems, answerer, harness, metrics."""

from __future__ import annotations

from typing import Any

__all__ = ["EvalConfig", "compare", "evaluate"]


def __getattr__(name: str) -> Any:
    # keep ``import dimobench.evaluate`` light: the harness loads on first use
    if name in __all__:
        from dimobench.evaluate import api

        return getattr(api, name)
    raise AttributeError(name)
