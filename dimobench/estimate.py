"""Dry runs: what an LLM generation and its stage-6 verification would call and cost, calling nothing.

This sits beside :mod:`dimobench.api` (above the stage packages) because an estimate of verification needs
generation's text and verification's request builder at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dimobench.backends import batch as batch_api
from dimobench.backends.cache import CachedLLM, ReplyCache, cache_key, cacheable
from dimobench.backends.jobs import Job
from dimobench.backends.usage import Ledger, cost_usd
from dimobench.catalog import Catalog
from dimobench.generate import rewrite
from dimobench.generate.config import GenerateConfig, RunOptions
from dimobench.generate.pipeline import run_stages
from dimobench.suite.load import Suite
from dimobench.suite.schema import Manifest, Persona, QAItem, Turn

__all__ = ["estimate_generation", "estimate_verify"]


def estimate_generation(cfg: GenerateConfig, options: RunOptions | None = None, *, verify: bool = False,
                        batch: bool = False) -> dict[str, object]:
    """What an LLM generation would cost, without calling anything: jobs, calls the cache does not answer,
    estimated tokens and USD. Plans offline in a temporary folder; needs no key.

    ``verify=True`` with an LLM verifier adds ``verify``: the stage-6 calls (one per QA item, plus one check
    per rendered cue or confounder turn when an LLM writes the text), see
    :func:`estimate_verify`. ``batch=True`` prices the calls at batch-API rates.
    """
    import tempfile

    from dimobench.backends import OfflineBackend
    from dimobench.backends.base import parse_reply
    from dimobench.backends.cache import ReplyCache, cache_key, cacheable
    from dimobench.catalog import load_catalog

    cfg = cfg.check()
    llm_verify = verify and cfg.verifier != "offline"
    est: dict[str, object] = {"generator": cfg.generator, "jobs": 0, "calls": 0, "cached": 0, "input_tokens": 0,
                              "output_tokens": 0, "cost_usd_estimate": 0.0, "batch": batch}
    if cfg.generator == "offline" and not llm_verify:
        return est
    cache = ReplyCache((options or RunOptions()).cache_dir)
    provider, _, model = cfg.generator.partition("/")

    def cached(request: Any) -> Any:
        hit = cache.get(cache_key(provider, model, request)) if cacheable(request) else None
        try:
            return parse_reply(hit["text"], request.response_model) if hit else None
        except Exception:
            return None

    catalog = load_catalog()
    with tempfile.TemporaryDirectory(prefix="dimobench-plan-") as tmp:
        res = run_stages(cfg, Path(tmp) / "plan", llm=OfflineBackend())["results"]
        personas, turns, qa = res["personas"].personas, res["confounders"].turns, res["qa"].qa
        if cfg.generator != "offline":
            est = {**rewrite.estimate(cfg.seed, catalog, personas, turns, qa, cfg.generator, cached, batch=batch),
                   "batch": batch}
        if llm_verify:
            est["verify"] = estimate_verify(cfg.seed, catalog, personas, res["drift"].schedules, turns,
                                                       qa, cfg.generator, cfg.verifier, cache, Path(tmp) / "render",
                                                       batch=batch)
    return est


VERIFY_OUTPUT_TOKENS = {"verify": 330, "check": 60}
"""Rough output tokens of one item judgement (six criteria) and of one turn check, for estimates."""


class _Uncached:
    """A backend that has nothing to say: behind the reply cache it answers only what the cache holds."""

    def __init__(self, spec: str) -> None:
        self.spec = spec

    def complete(self, request: Any) -> Any:
        from dimobench.errors import BackendError

        raise BackendError("not in the cache")


class _Recorder:
    """Stands in for :class:`dimobench.verify.llm.Calls`: records the jobs, answers none."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.failures: list[dict[str, str]] = []

    def run(self, jobs: list[Job], llm: Any, ledger: Any) -> dict[str, Any]:
        self.jobs.extend(jobs)
        return {}


def estimate_verify(seed: int, catalog: Catalog, personas: list[Persona], schedules: list[Any], turns: list[Turn],
                    qa: list[QAItem], generator: str, verifier: str, cache: Any, scratch: Path,
                    batch: bool = False) -> dict[str, Any]:
    """The stage-6 calls an LLM verifier would make after this generation, built as the verifier builds them.

    One call per QA item (:func:`dimobench.verify.llm.item_jobs`) and, when an LLM writes the text, one check
    per rendered cue or confounder turn (:func:`dimobench.verify.llm_turns.check_and_rerender`); turns that fail
    their check add up to ``rerenders_max`` re-renders and as many re-checks, which depend on the replies and
    are not counted. The requests carry the final text: when the reply cache holds every generation reply it is
    rebuilt from there (in ``scratch``) and cached verifier replies are counted; otherwise the offline text
    stands in for sizes and every call counts as one to make (``exact`` is False).
    """
    from dimobench.verify import llm as verify_llm
    from dimobench.verify import llm_turns
    from dimobench.verify.verdicts import check_criteria

    exact = True
    if generator != "offline":
        got = rewrite.rewrite_text(seed, catalog, personas, turns, qa, CachedLLM(_Uncached(generator), cache), scratch,
                                   batch=None)
        exact = not got["failures"]
        if exact:
            personas, turns, qa = got["personas"], got["turns"], got["qa"]
    # a stand-in manifest: the job builders read only its config, so the other required fields stay unset
    manifest = Manifest.model_construct(config={"seed": seed})  # type: ignore[call-arg]  # model_construct skips them
    suite = Suite(scratch, manifest, personas, schedules, turns, qa)
    items = verify_llm.item_jobs(suite, turns, seed, check_criteria(None))
    recorder = _Recorder()
    if generator != "offline":
        llm_turns.check_and_rerender(suite, seed, None, None, recorder,  # type: ignore[arg-type]
                                     {"verifier": Ledger(verifier), "generator": Ledger(generator)})
    jobs = items + recorder.jobs
    provider, _, model = verifier.partition("/")
    store: ReplyCache = cache

    def hit(request: Any) -> bool:
        return exact and cacheable(request) and store.get(cache_key(provider, model, request)) is not None

    todo = [j for j in jobs if not hit(j.request)]
    tokens_in = sum(len(m.content) for j in todo for m in j.request.messages) // 4
    tokens_out = sum(VERIFY_OUTPUT_TOKENS.get(j.kind, 60) for j in todo)
    return {"verifier": verifier, "jobs": len(jobs), "items": len(items), "turn_checks": len(recorder.jobs),
            "calls": len(todo), "cached": len(jobs) - len(todo), "exact": exact,
            "rerenders_max": llm_turns.MAX_RERENDERS * len(recorder.jobs), "input_tokens": tokens_in,
            "output_tokens": tokens_out, "cost_usd_estimate": cost_usd(verifier, tokens_in, tokens_out, batch=batch),
            "batch": batch and provider in batch_api.PROVIDERS}
