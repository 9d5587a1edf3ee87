"""Small pieces every backend shares that need nothing of the request models: the strict JSON schema sent to
providers, settings read from the environment, and keeping API keys out of anything written."""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema in the shape OpenAI strict mode and Gemini accept.

    References are inlined, titles dropped, every object closed (``additionalProperties: false``) with every
    property required.
    """
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})

    def fix(node: Any) -> Any:
        if isinstance(node, list):
            return [fix(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return fix(defs[node["$ref"].split("/")[-1]])
        out = {k: fix(v) for k, v in node.items() if k not in ("title", "default")}
        if out.get("type") == "object":
            out["additionalProperties"] = False
            out["required"] = list(out.get("properties", {}))
        return out

    return fix(raw)


def env_int(var: str, default: int | None) -> int | None:
    """A positive integer from the environment variable ``var``; ``default`` when unset or not one."""
    try:
        value = int(os.environ.get(var, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def wait_scale() -> float:
    """Factor applied to every retry wait, from ``DIMOBENCH_RETRY_WAIT_SCALE`` (tests set 0); 1 when unset or bad."""
    try:
        return max(0.0, float(os.environ.get("DIMOBENCH_RETRY_WAIT_SCALE", "1")))
    except ValueError:
        return 1.0


SECRET_VARS = ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


def redact(text: str) -> str:
    """Replace every API key from the environment found in ``text`` by ``***``."""
    for var in SECRET_VARS:
        secret = os.environ.get(var)
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header, if there is one."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return float(ms) / 1000
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
