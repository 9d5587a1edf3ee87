"""What real models send back, made usable: JSON found inside fences or prose, and the messages of a retry.

Hosted APIs with strict structured output answer bare JSON. Local servers often do not: a server that ignores
``response_format`` (``transformers serve``, older llama.cpp builds) lets the model wrap its JSON in a
```` ```json ```` fence or a sentence, and a small model often runs into ``max_tokens``. :func:`extract_json`
takes the first JSON object it can find (a bare reply is taken as it is, so strict servers' replies keep their
exact text); :func:`feedback_messages` builds the retry that shows the model its own reply and what was wrong
with it instead of sending the same prompt again; :func:`schema_messages` puts the JSON schema into the prompt
for servers without structured output. Both texts are prompt files (``prompts/backend/``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from dimobench import prompts

FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)
"""A Markdown code fence; an unclosed one (a reply cut at ``max_tokens``) runs to the end of the text."""
FEEDBACK_REPLY_CHARS = 4000
"""How much of a bad reply a retry quotes back: enough to show the mistake, bounded so prompts stay small."""


class NoJSON(ValueError):
    """The reply holds no JSON value anywhere; ``message`` says why in the words of the strict parser."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def extract_json(text: str) -> tuple[Any, str]:
    """The JSON value in ``text`` and the exact JSON text it came from.

    Tried in order: the whole text (returned unchanged, so a bare reply keeps its bytes), the contents of each
    code fence, then the JSON value that starts at the first ``{`` (else the first ``[``), prose before and
    after it dropped; a value cut short there is not looked into for a fragment that decodes. Raises
    :class:`NoJSON` with the strict parser's complaint about the whole text when nothing decodes.
    """
    try:
        return json.loads(text), text
    except json.JSONDecodeError as exc:
        first = f"reply is not valid JSON ({exc.msg} at char {exc.pos})"
    for m in FENCE.finditer(text):
        inner = m.group(1).strip()
        try:
            return json.loads(inner), inner
        except json.JSONDecodeError:
            continue
    decoder = json.JSONDecoder()
    # only the first opening bracket of each kind: in a reply cut short, a later "{" starts a nested object
    # that decodes on its own, and taking it would pass a fragment off as the answer
    for opener in "{[":
        i = text.find(opener)
        if i < 0:
            continue
        try:
            value, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            continue
        return value, text[i:end]
    raise NoJSON(first)


def feedback_messages(messages: list[dict[str, str]], reply: str, error: str) -> list[dict[str, str]]:
    """``messages`` followed by the model's bad ``reply`` and a user turn saying what was wrong with it.

    The reply is quoted up to :data:`FEEDBACK_REPLY_CHARS` characters; an empty reply is shown as such.
    """
    quoted = reply if len(reply) <= FEEDBACK_REPLY_CHARS else reply[:FEEDBACK_REPLY_CHARS] + " ..."
    fix = prompts.render("backend/fix_reply", error=error).text
    return [*messages, {"role": "assistant", "content": quoted or "(empty reply)"}, {"role": "user", "content": fix}]


def schema_instruction(schema: dict[str, Any]) -> str:
    """The instruction that carries ``schema`` in the prompt (``prompts/backend/schema.j2``)."""
    return prompts.render("backend/schema", schema=json.dumps(schema, ensure_ascii=False, indent=1)).text


def schema_messages(messages: list[dict[str, str]], schema: dict[str, Any]) -> list[dict[str, str]]:
    """``messages`` with the schema instruction appended to the system message (or a new one first).

    Small models follow a system instruction better than a note at the end of a long user turn, and the
    instruction stays put when a retry appends turns after it.
    """
    note = schema_instruction(schema)
    out = [dict(m) for m in messages]
    for m in out:
        if m["role"] == "system":
            m["content"] = f"{m['content'].rstrip()}\n\n{note}"
            return out
    return [{"role": "system", "content": note}, *out]
