"""The dataset card (``README.md``) of a Hugging Face export: YAML front matter the Hub and ``datasets`` read,
then what the data is, how it was made, how to load it, its canary and its validity audit."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from dimobench.suite.card import LICENSE, audit_section, canary
from dimobench.suite.schema import Manifest

if TYPE_CHECKING:
    from dimobench.export.hf import ConfigInfo

WHAT = {"personas": "simulated users: profile, traits with their states, the people they mention",
        "schedules": "the latent plan: each persona's drifts and the phase of every turn",
        "dialogues": "every turn: user utterance, assistant reply, session, timestamp, annotation",
        "qa": "questions: options (stale and confounder ones marked), gold answer, evidence turns",
        "verdicts": "the verifier's verdict on each question, overall and per criterion"}

_HUB_LICENCES = {"cc-by-4.0", "cc-by-sa-4.0", "cc-by-nc-4.0", "cc-by-nc-sa-4.0", "cc-by-nd-4.0", "mit",
                 "apache-2.0", "cc0-1.0", "odc-by", "gpl-3.0"}
_PLAIN = re.compile(r"[A-Za-z_][\w./<>+-]*")
_RESERVED = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}


def hub_licence(text: str) -> str:
    """The Hub's licence id for a licence as a suite names it (``CC BY-NC 4.0 ...`` -> ``cc-by-nc-4.0``), else
    ``other`` (the card's text then says which)."""
    slug = re.sub(r"[\s_]+", "-", text.split("(")[0].strip().lower())
    return slug if slug in _HUB_LICENCES else "other"


def _scalar(v: Any) -> str:
    if v is None or isinstance(v, bool):
        return {None: "null", True: "true", False: "false"}[v]
    if isinstance(v, int | float):
        return str(v)
    if isinstance(v, dict | list):
        return "{}" if isinstance(v, dict) else "[]"
    s = str(v)
    # JSON's double-quoted strings are YAML too; plain only where no YAML reader could take them for anything else
    return s if _PLAIN.fullmatch(s) and s.lower() not in _RESERVED else json.dumps(s, ensure_ascii=False)


def to_yaml(obj: dict[str, Any] | list[Any], indent: int = 0) -> list[str]:
    """Block-style YAML lines of nested dicts and lists (enough for a card; no dependency on a YAML writer)."""
    pad, lines = " " * indent, []
    items = obj.items() if isinstance(obj, dict) else ((None, v) for v in obj)
    for key, value in items:
        head = f"{pad}{key}:" if key is not None else f"{pad}-"
        if isinstance(value, dict | list) and value:
            sub = to_yaml(value, indent + 2)
            if key is None:  # a mapping or sequence as a list item starts on the dash's line
                lines += [f"{head} {sub[0].lstrip()}", *sub[1:]]
            else:
                lines += [head, *sub]
        else:
            lines.append(f"{head} {_scalar(value)}")
    return lines


def front_matter(manifest: Manifest, configs: list[ConfigInfo], split: str) -> dict[str, Any]:
    """The card's YAML metadata: licence, tasks, size, one ``configs`` and ``dataset_info`` entry per config."""
    n = next((c.rows for c in configs if c.name == "qa"), 0)
    size = next(label for bound, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                                           (1_000_000, "100K<n<1M"), (float("inf"), "1M<n<10M")) if n < bound)
    return {
        "license": hub_licence(_licence(manifest)),
        "language": ["en"],
        "pretty_name": _title(manifest),
        "task_categories": ["question-answering"] + (["multiple-choice"] if manifest.status != "imported" else []),
        "tags": ["dimobench", "long-term-memory", "dialogue", "preference-drift", "benchmark"]
        + (["synthetic"] if manifest.status != "imported" else []),
        "size_categories": [size],
        "configs": [{"config_name": c.name, **({"default": True} if c.name == "qa" else {}),
                     "data_files": [{"split": split, "path": c.path}]} for c in configs],
        "dataset_info": [{"config_name": c.name, "features": c.features,
                          "splits": [{"name": split, "num_bytes": c.num_bytes, "num_examples": c.rows}],
                          "download_size": c.parquet_bytes, "dataset_size": c.num_bytes} for c in configs],
    }


def _licence(manifest: Manifest) -> str:
    return str(manifest.config.get("licence") or LICENSE) if manifest.status == "imported" else LICENSE


def _title(manifest: Manifest) -> str:
    if manifest.status == "imported":
        return f"{manifest.config.get('source')} in the dimobench suite format"
    return "DiMoBench-style drift suite"


_GENERATED = """Long dialogues between simulated users and an assistant, in which each user's attitudes and preferences
drift gradually and implicitly among keyword-matched chatter, other people's states and recollections of the
past, with multiple-choice questions asked along the way. It tests whether a long-term memory system keeps
stable traits, follows real change and ignores noise that only looks like change. Gold answers come from a
latent plan (the `schedules` config), not from a model."""

_IMPORTED = """Conversations and questions of {source}, converted to the dimobench suite format (one turn per
utterance; `speaker` names who said it) so that memory systems can be scored on it with the same harness as on
dimobench's drift suites. Questions keep the source's categories in `source_type`."""


def _provenance(manifest: Manifest) -> str:
    cfg = manifest.config
    if manifest.status == "imported":
        return (f"- Converted by `dimobench import {cfg.get('source')}` from `{cfg.get('path')}`; the source's "
                f"licence applies, not dimobench's.\n- **Source:** {cfg.get('citation')}")
    backends = cfg.get("backends") if isinstance(cfg.get("backends"), dict) else {}
    assert isinstance(backends, dict)
    preset = f", preset {cfg['preset']}" if cfg.get("preset") else ""
    return (f"- **Config:** seed {cfg.get('seed')}{preset}, {cfg.get('personas')} personas x {cfg.get('turns')} "
            f"turns, {cfg.get('drifts')} drift(s) per persona.\n- **Generator:** `{backends.get('generator')}`; "
            f"**verifier:** `{backends.get('verifier') or 'none'}`.")


def _breakdowns(counts: dict[str, object]) -> str:
    """Question counts by type, phase and source type; a table that says nothing (all zero, only "none") is left
    out."""
    out = ""
    for key in ("by_qa_type", "by_phase", "by_source_type"):
        by = counts.get(key)
        if isinstance(by, dict) and any(by.values()) and set(by) != {"none"}:
            out += f"\n| {key.removeprefix('by_')} | questions |\n|---|---|\n"
            out += "".join(f"| {k} | {v} |\n" for k, v in by.items())
    return out


def render_hf_card(manifest: Manifest, configs: list[ConfigInfo], split: str, empty: list[str]) -> str:
    """The export's ``README.md``: YAML front matter, then description, provenance, loading, canary, audit.

    Args:
        manifest: The exported suite's manifest.
        configs: The configs written, in order.
        split: The one split of every config.
        empty: Record files of the suite left out for having no records.
    """
    counts, repo = manifest.counts, "USER/REPO"
    about = _IMPORTED.format(source=manifest.config.get("source")) if manifest.status == "imported" else _GENERATED
    table = "".join(f"| `{c.name}` | {c.rows} | {WHAT.get(c.name, '')} |\n" for c in configs)
    json_cols = "; ".join(f"`{c.name}`: {', '.join(f'`{j}`' for j in c.json_columns)}" for c in configs
                          if c.json_columns)
    notes = "".join([f"Columns stored as JSON text (their values have no common type): {json_cols}.\n"
                     if json_cols else "",
                     f"Left out for having no records: {', '.join(f'`{e}`' for e in empty)}.\n" if empty else ""])
    front = "\n".join(to_yaml(front_matter(manifest, configs, split)))
    return f"""---
{front}
---

# {_title(manifest)}

{about}

Exported from a dimobench suite (format v{manifest.format_version}, status `{manifest.status}`) by dimobench
{manifest.dimobench_version}.

{_provenance(manifest)}
- **Counts:** {counts.get('personas')} personas, {counts.get('turns')} turns, {counts.get('qa')} questions.
- **Licence:** {_licence(manifest)}.
- **Canary:** `{canary(manifest)}`
  (do not train on data that contains this string; every Parquet file carries it in its metadata too).

| config | rows | what it holds |
|---|---|---|
{table}{_breakdowns(counts)}
## Loading

```python
from datasets import load_dataset

qa = load_dataset("{repo}", "qa", split="{split}")
turns = load_dataset("{repo}", "dialogues", split="{split}")
local = load_dataset("path/to/this/folder", "qa", split="{split}")  # a downloaded or unpublished copy
```

One Parquet file per config (`<config>/{split}.parquet`); `suite_manifest.json` is the source suite's manifest
(config, backends, sha256 of its JSONL files). A question with `ask_turn = t` is asked after turn `t` of its
persona: only turns up to `t` may be used to answer it. `annotation`, `schedules` and every gold field are
benchmark-side: a memory system under evaluation must never see them.
{notes}
Upload with `huggingface-cli upload {repo} . --repo-type dataset --exclude ".dimobench/*"` from this folder.
""" + audit_section(manifest)
