"""LLM judges for free-text answers (``dimobench evaluate --free-text --judge X [--judge Y ...]``).

Each judge sees the question, the free-text answer and the reference answers labelled ``A``, ``B``, ...: every
option of the question (so the judge does not know which one is gold), or the gold answer alone when the
question has no options (imported free-text suites). It names the one reference the answer states, or
``none``. The harness then maps the majority's letter back to an option index, so ``correct``, the stale rate
and the confounder rate are computed exactly as for multiple choice.

Vote: a label wins with a strict majority of the *configured* judges (2 of 2, 2 of 3); otherwise there is no
majority and the answer matched nothing (it counts as wrong). A judge whose call fails after its retries
makes the whole item failed (recorded, counted as wrong, and counted in the run's failures), so a verdict
always rests on every judge. Agreement (unanimous share, Fleiss' kappa, pairwise Cohen's kappa) is computed
in :func:`dimobench.evaluate.scoring.judge_agreement` from the votes written to answers.jsonl.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from dimobench import prompts
from dimobench.backends.base import ChatLLM, Message, Request
from dimobench.backends.limits import RunAborted
from dimobench.backends.usage import Ledger
from dimobench.backends.wire import redact

PROMPT = "evaluate/judge"
VERSION = "1"
NONE = "none"
TEMPERATURE = 0.0
SEED = 0
MAX_TOKENS = 300
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@lru_cache(maxsize=32)
def verdict_model(n: int) -> type[BaseModel]:
    """``{"reason": str, "match": "A".."<n-th letter>" | "none"}``; any other label fails validation (retried)."""
    labels = (*LETTERS[:n], NONE)
    label: Any = Literal.__getitem__(labels)  # a Literal built at run time; typeshed types it object
    return create_model("JudgeVerdict", reason=(str, Field(description="one short sentence")),
                        match=(label, ...))


def majority(votes: Sequence[str | None], n_judges: int) -> str | None:
    """The label more than half of ``n_judges`` gave, or None when no label has a strict majority.

    Failed votes (None) count for nothing, so they can only prevent a majority.
    """
    counts = Counter(v for v in votes if v is not None)
    if not counts:
        return None
    label, top = counts.most_common(1)[0]
    return label if top * 2 > n_judges else None


class JudgePanel:
    """Up to three LLM judges sharing one prompt; each call is cached like any other LLM call."""

    def __init__(self, llms: Sequence[ChatLLM]) -> None:
        """Judge with ``llms`` (in the order given on the command line)."""
        self.llms = list(llms)
        self.ledgers = [Ledger(llm.spec) for llm in self.llms]

    @property
    def specs(self) -> list[str]:
        """``provider/model`` of every judge."""
        return [llm.spec for llm in self.llms]

    def describe(self) -> dict[str, Any]:
        """What report.json records about the judges."""
        prompt = prompts.load(PROMPT)
        return {"judges": self.specs, "version": VERSION, "prompt": PROMPT, "prompt_version": prompt.version,
                "prompt_hash": prompt.hash, "temperature": TEMPERATURE, "seed": SEED,
                "vote": "strict majority of all judges; no majority = no match (wrong)",
                "labels": "the reference option the answer states (A, B, ...) or none"}

    def request(self, question: str, answer: str, references: Sequence[str], item: str = "") -> Request:
        """The request every judge is sent for one answer."""
        refs = [{"letter": LETTERS[i], "text": r} for i, r in enumerate(references)]
        text = prompts.render(PROMPT, question=question, answer=answer, references=refs).text
        return Request(messages=[Message(role="user", content=text)], response_model=verdict_model(len(refs)),
                       temperature=TEMPERATURE, seed=SEED, item=item, max_tokens=MAX_TOKENS)

    def judge(self, question: str, answer: str, references: Sequence[str], item: str = "") -> dict[str, Any]:
        """Every judge's vote and the majority: ``{"judges": [...], "majority": label | None, "failed": bool}``.

        A vote is ``{"judge", "match", "reason"}``, with ``match`` None and an ``error`` when the call failed.
        """
        request = self.request(question, answer, references, item)
        votes: list[dict[str, Any]] = []
        for llm, ledger in zip(self.llms, self.ledgers, strict=True):
            try:
                resp = ledger.call(llm, request)
            except RunAborted:  # no server, or the run's time is up: the run ends, not just this vote
                raise
            except Exception as exc:  # recorded in answers.jsonl, never fatal
                votes.append({"judge": llm.spec, "match": None, "error": redact(str(exc))})
                continue
            votes.append({"judge": llm.spec, "match": resp.parsed.match, "reason": resp.parsed.reason.strip()})
        failed = any(v["match"] is None for v in votes)
        return {"judges": votes, "majority": None if failed else majority([v["match"] for v in votes],
                                                                         len(self.llms)),
                "failed": failed}

    def usage(self) -> list[dict[str, Any]]:
        """Calls, cache hits, tokens and estimated cost per judge."""
        return [usage_summary(ledger, "judge") for ledger in self.ledgers]


def usage_summary(ledger: Ledger, role: str) -> dict[str, Any]:
    """A ledger's totals for the run log, labelled with the role (``answerer`` or ``judge``)."""
    out = ledger.summary()
    return {"role": role, "spec": out.pop("generator"), **out}
