"""The LLM answerer: ``dimobench evaluate --answerer openai/<model>|gemini/<model>`` (DESIGN.md sections 5, 8).

Same role and interface as the offline answerer (:meth:`LLMAnswerer.choose` takes the question, the options
and the recalled items), so every system still gets the same answerer, k and prompts. The model sees the
question, the recalled items (text, score, source turns, best first) and, in multiple-choice mode, the
options labelled ``A``, ``B``, ...; it replies in JSON with the letter (a pydantic ``Literal``, so a letter
out of range is schema-invalid and retried like truncated JSON). With ``--free-text`` it sees no options and
writes a one-sentence answer, which the :class:`~dimobench.evaluate.judges.JudgePanel` grades.

Calls go through the backends (structured output, tenacity retries honouring Retry-After, the shared reply
cache) at temperature 0 with a fixed seed, so a rerun with a warm cache makes no call. The replay replays a
persona first and then hands all of its questions, with the items recalled at each ask turn, to
:meth:`LLMAnswerer.choose_batch`, which runs them on a bounded thread pool and returns results in question
order. A call that still fails after its retries never raises: the item is recorded as failed (``chosen``
None, ``correct`` False, the redacted error in answers.jsonl).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, cast

from pydantic import BaseModel, Field, create_model

from dimobench import prompts
from dimobench.backends import normalize_spec
from dimobench.backends.base import ChatLLM, Message, Request
from dimobench.backends.limits import RunAborted
from dimobench.backends.usage import Ledger
from dimobench.backends.wire import redact
from dimobench.errors import ConfigError
from dimobench.evaluate.judges import LETTERS, NONE, JudgePanel, usage_summary
from dimobench.evaluate.protocol import Recalled

VERSION = "1"
PROMPTS = {"choice": "evaluate/answer_choice", "free_text": "evaluate/answer_free"}
TEMPERATURE = 0.0
SEED = 0
MAX_TOKENS = 400
MAX_JUDGES = 3


class FreeAnswer(BaseModel):
    """The free-text reply."""

    answer: str = Field(description="one short sentence")


@lru_cache(maxsize=32)
def choice_model(n: int) -> type[BaseModel]:
    """``{"reason": str, "answer": "A".."<n-th letter>"}`` for ``n >= 2`` options."""
    letter: Any = Literal.__getitem__(tuple(LETTERS[:n]))  # a Literal built at run time; typeshed types it object
    return create_model("AnswerChoice", reason=(str, Field(description="one short sentence")),
                        answer=(letter, ...))


@dataclass(frozen=True)
class LLMChoice:
    """What the LLM answerer returns for one question (the replay writes ``extra`` into the answer row)."""

    index: int | None
    """The chosen option (None when the call failed or free text matched no option)."""
    support: list[float] = field(default_factory=list)
    mode: str = "llm_choice"
    """``llm_choice``, ``llm_free_text``, ``no_options`` or ``single_option``."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields added to the answer row: ``reason``/``answer_text``, ``judges``, ``majority``, ``failed``, ``error``."""
    correct: bool | None = None
    """Set where the replay's ``chosen == answer_index`` cannot decide: failures (False) and free text on
    questions without options (the majority matched the gold answer)."""


def check_roles(answerer: str, free_text: bool, judges: Sequence[str]) -> tuple[str, list[str]]:
    """Normalise ``--answerer`` and ``--judge`` specs; raise ``ConfigError`` (one line) when they cannot work."""
    from dimobench.evaluate.gloss import OFFLINE_ANSWERERS

    spec = answerer if answerer in OFFLINE_ANSWERERS else normalize_spec(answerer, "--answerer")
    specs = [normalize_spec(j, "--judge") for j in judges]
    if specs and not free_text:
        raise ConfigError("--judge grades free-text answers: add --free-text (multiple-choice answers are scored "
                          "against the gold option directly)")
    if free_text and spec in OFFLINE_ANSWERERS:
        raise ConfigError("--free-text needs an LLM --answerer (openai/<model> or gemini/<model>); the offline "
                          "answerer only picks options")
    if free_text and not specs:
        raise ConfigError("--free-text needs at least one --judge (openai/<model> or gemini/<model>) to grade "
                          "the answers")
    if "offline" in specs:
        raise ConfigError("--judge offline: judges are LLMs (openai/<model> or gemini/<model>)")
    if len(specs) > MAX_JUDGES:
        raise ConfigError(f"--judge given {len(specs)} times: at most {MAX_JUDGES} judges")
    dupes = sorted({s for s in specs if specs.count(s) > 1})
    if dupes:
        raise ConfigError(f"--judge {dupes[0]} given twice: the same model would repeat the same cached verdict")
    return spec, specs


def _items(items: Sequence[Recalled]) -> list[dict[str, str]]:
    return [{"text": " ".join(it.text.split()), "score": f"{it.score:.3f}",
             "turns": ", ".join(map(str, it.source_turns)) or "unknown"} for it in items]


class LLMAnswerer:
    """Answers through a chat backend; see the module docstring."""

    name = "llm"
    version = VERSION

    def __init__(self, llm: ChatLLM, free_text: bool = False, judges: JudgePanel | None = None,
                 concurrency: int = 8) -> None:
        """Answer with ``llm``; in ``free_text`` mode grade with ``judges``; ``concurrency`` calls at once."""
        if free_text and judges is None:
            raise ConfigError("free-text answers need judges to be scored")
        self.llm, self.free_text, self.judges = llm, free_text, judges
        self.concurrency = max(1, concurrency)
        self.ledger = Ledger(llm.spec)
        self.prompt = PROMPTS["free_text" if free_text else "choice"]

    def describe(self) -> dict[str, object]:
        """What report.json records about the answerer (no URL, key or concurrency: they change no answer)."""
        provider, _, model = self.llm.spec.partition("/")
        prompt = prompts.load(self.prompt)
        return {"name": self.name, "version": self.version, "spec": self.llm.spec, "provider": provider,
                "model": model, "mode": "free_text" if self.free_text else "choice", "prompt": self.prompt,
                "prompt_version": prompt.version, "prompt_hash": prompt.hash, "temperature": TEMPERATURE,
                "seed": SEED}

    def request(self, question: str, options: Sequence[str], items: Sequence[Recalled], item: str = "") -> Request:
        """The answer request: options are shown only in multiple-choice mode."""
        if self.free_text:
            text = prompts.render(self.prompt, question=question, items=_items(items)).text
            model: type[BaseModel] = FreeAnswer
        else:
            opts = [{"letter": LETTERS[i], "text": o} for i, o in enumerate(options)]
            text = prompts.render(self.prompt, question=question, items=_items(items), options=opts).text
            model = choice_model(len(options))
        return Request(messages=[Message(role="user", content=text)], response_model=model,
                       temperature=TEMPERATURE, seed=SEED, item=item, max_tokens=MAX_TOKENS)

    def _call(self, request: Request) -> tuple[Any, str | None]:
        try:
            resp = self.ledger.call(self.llm, request)
        except RunAborted:  # no server, or the run's time is up: the run ends, not just this answer
            raise
        except Exception as exc:  # recorded in answers.jsonl, never fatal
            return None, redact(str(exc))
        return resp.parsed, None

    def choose(self, question: str, options: list[str], items: list[Recalled], item: str = "") -> LLMChoice:
        """Pick an option (multiple choice) or write an answer (free text, not judged here)."""
        if not self.free_text:
            if not options:
                return LLMChoice(-1, mode="no_options")
            if len(options) == 1:
                return LLMChoice(0, mode="single_option")
        parsed, error = self._call(self.request(question, options, items, item))
        if error is not None:
            key = "answer_text" if self.free_text else "reason"
            return LLMChoice(None, mode="llm_free_text" if self.free_text else "llm_choice", correct=False,
                             extra={key: None, "failed": True, "error": error})
        if self.free_text:
            return LLMChoice(None, mode="llm_free_text", extra={"answer_text": parsed.answer.strip(),
                                                                "failed": False})
        return LLMChoice(LETTERS.index(parsed.answer), mode="llm_choice",
                         extra={"reason": parsed.reason.strip(), "failed": False})

    def answer(self, q: Any, items: list[Recalled]) -> LLMChoice:
        """Answer (and, in free-text mode, judge) one suite question; gold fields reach only the judges."""
        choice = self.choose(q.question, list(q.options), items, q.qa_id)
        if not self.free_text or choice.extra.get("failed") or self.judges is None:
            return choice  # multiple choice, or a failed call
        references = list(q.options) or ([q.answer] if q.answer else [])
        if not references:
            return LLMChoice(None, mode="llm_free_text", extra={**choice.extra, "judges": [], "majority": None})
        verdict = self.judges.judge(q.question, choice.extra["answer_text"], references, q.qa_id)
        label = verdict["majority"]
        extra = {"answer_text": choice.extra["answer_text"], "judges": verdict["judges"], "majority": label,
                 "failed": verdict["failed"]}
        if verdict["failed"]:
            # a backend's error already starts with its spec; only other errors are told which judge they are
            extra["error"] = "; ".join(v["error"] if v["error"].startswith(f"{v['judge']}:") else
                                       f"{v['judge']}: {v['error']}" for v in verdict["judges"] if v.get("error"))
            return LLMChoice(None, mode="llm_free_text", extra=extra, correct=False)
        index = LETTERS.index(label) if label not in (None, NONE) else None
        if q.options:
            return LLMChoice(index, mode="llm_free_text", extra=extra)
        return LLMChoice(None, mode="llm_free_text", extra=extra, correct=index == 0)

    def choose_batch(self, asks: Sequence[tuple[Any, list[Recalled]]]) -> list[LLMChoice]:
        """Answer ``(question, recalled items)`` pairs concurrently; results in the order given."""
        if self.concurrency == 1 or len(asks) < 2:
            return [self.answer(q, items) for q, items in asks]
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(lambda a: self.answer(*a), asks))  # map submits in order, returns in order

    def usage(self) -> list[dict[str, Any]]:
        """Calls, cache hits, tokens and estimated cost of the answerer and of each judge."""
        return [usage_summary(self.ledger, "answerer"), *(self.judges.usage() if self.judges else [])]


def make_answerer(spec: str, free_text: bool, judges: Sequence[str], *, base_url: str | None,
                  cache_dir: Any, concurrency: int) -> LLMAnswerer:
    """Resolve the answerer and judge backends (a missing key or SDK fails here, before any replay)."""
    from dimobench.backends import resolve_backend

    # check_roles has already refused "offline" here, so every backend resolved is a callable ChatLLM
    llm = cast(ChatLLM, resolve_backend(spec, base_url=base_url, cache_dir=cache_dir))
    panel = JudgePanel([cast(ChatLLM, resolve_backend(j, base_url=base_url, cache_dir=cache_dir)) for j in judges]) \
        if judges else None
    return LLMAnswerer(llm, free_text, panel, concurrency)
