"""The one prompt loader (STYLE.md convention 6): ``prompts/<stage>/<name>.j2`` files with a front matter.

A prompt file starts with a front matter between ``---`` lines::

    ---
    version: 1
    variables: [persona, turns]
    response_model: SessionTurns
    ---
    Jinja2 template text ...

``render(name, **vars)`` raises ``MissingVariables`` naming *every* missing variable at once, renders with
undefined names as errors, and returns the text with the prompt's hash (sha256 of the whole file, so a
changed template or version changes every fingerprint and cache key that uses it).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from dimobench.errors import DimobenchError
from dimobench.resources import resource_dir

if TYPE_CHECKING:
    import jinja2


class MissingVariables(DimobenchError):
    """A prompt was rendered without some of its required variables."""

    def __init__(self, name: str, missing: list[str]) -> None:
        self.name, self.missing = name, missing
        super().__init__(f"prompt {name!r} is missing variable(s): {', '.join(missing)}")


@dataclass(frozen=True)
class Prompt:
    """A loaded prompt file."""

    name: str
    version: str
    variables: tuple[str, ...]
    response_model: str
    body: str
    hash: str


@dataclass(frozen=True)
class Rendered:
    """A rendered prompt: its text, and the hash and version of the file it came from."""

    name: str
    text: str
    hash: str
    version: str
    response_model: str


def prompt_dir() -> Path:
    """The packaged ``prompts/`` directory the ``.j2`` files are read from."""
    return resource_dir("prompts")


@lru_cache(maxsize=64)
def load(name: str) -> Prompt:
    """Load ``prompts/<name>.j2`` (``name`` like ``generator/session``)."""
    path = prompt_dir() / f"{name}.j2"
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DimobenchError(f"no prompt file {path}") from None
    meta, body = _front_matter(raw, path)
    return Prompt(name=name, version=str(meta.get("version", "")), variables=tuple(meta.get("variables", [])),
                  response_model=str(meta.get("response_model", "")), body=body,
                  hash=hashlib.sha256(raw.encode()).hexdigest())


def render(name: str, /, **variables: object) -> Rendered:
    """Render a prompt; raise ``MissingVariables`` listing every required variable not given.

    ``name`` is positional-only, so a template may itself use a variable called ``name``.
    """
    prompt = load(name)
    missing = [v for v in prompt.variables if v not in variables]
    if missing:
        raise MissingVariables(name, missing)
    text = _template(name).render(**variables)
    return Rendered(name=name, text=text.strip() + "\n", hash=prompt.hash, version=prompt.version,
                    response_model=prompt.response_model)


def prompt_hashes(*names: str) -> dict[str, str]:
    """The sha256 of each named prompt file, for manifests and fingerprints."""
    return {n: load(n).hash for n in names}


def undeclared(name: str) -> set[str]:
    """Names the template uses that its front matter does not declare (a test keeps this empty)."""
    from jinja2 import meta

    env = _env()
    return meta.find_undeclared_variables(env.parse(load(name).body)) - set(load(name).variables)


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    import jinja2

    return jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True,
                              trim_blocks=True, lstrip_blocks=True)


@lru_cache(maxsize=64)
def _template(name: str) -> jinja2.Template:
    return _env().from_string(load(name).body)


def _front_matter(raw: str, path: Path) -> tuple[dict[str, str | list[str]], str]:
    lines = raw.split("\n")
    if not lines or lines[0].strip() != "---" or "---" not in [ln.strip() for ln in lines[1:]]:
        raise DimobenchError(f"{path}: a prompt file must start with a front matter between '---' lines")
    end = 1 + [ln.strip() for ln in lines[1:]].index("---")
    meta: dict[str, str | list[str]] = {}
    for n, line in enumerate(lines[1:end], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise DimobenchError(f"{path}:{n}: front matter lines are 'key: value'")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            meta[key.strip()] = [v.strip() for v in value[1:-1].split(",") if v.strip()]
        else:
            meta[key.strip()] = value
    return meta, "\n".join(lines[end + 1:])
