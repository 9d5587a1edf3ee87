"""Stage 6: verification of QA items against the suite's text and latent plan (DESIGN.md section 3).

Import ``verify_suite`` from here; the embedding model (torch) loads only when a suite is judged, and an LLM
verifier's SDK only when one is named.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dimobench.verify.embed import Embedder
    from dimobench.verify.verdicts import VerifyResult

__all__ = ["CRITERIA_NAMES", "VerifyResult", "verify_suite"]

CRITERIA_NAMES = ("supported", "temporally_valid", "implicit", "unambiguous", "type_faithful",
                  "confounder_robust")


def verify_suite(path: str | Path, verifier: str = "offline", only: list[str] | None = None,
                 embedder: Embedder | None = None, write: bool = True, plan_checks: str = "auto",
                 **llm_options: Any) -> VerifyResult:
    """Verify the suite at ``path``: write ``verdicts.jsonl`` and update the manifest atomically.

    Args:
        path: suite directory.
        verifier: ``"offline"``, or an LLM (``openai[/MODEL]``, ``gemini[/MODEL]``) judged by
            :func:`dimobench.verify.llm.verify_suite_llm`.
        only: criteria to run (default all six).
        embedder: an embedder to share across calls (default the process-wide one).
        write: False to judge without touching the suite.
        plan_checks: offline: ``auto``, ``on`` or ``off``: reject the items the suite's latent plan flags
            (:data:`dimobench.verify.verdicts.PLAN_CHECKS`; ``auto``: for ``--qa-rules valid`` suites).
        llm_options: for an LLM verifier: ``base_url``, ``cache_dir``, ``concurrency``, ``resume``, ...
            (ignored offline, where nothing is called).
    """
    if verifier != "offline":
        from dimobench.verify.llm import verify_suite_llm

        return verify_suite_llm(path, verifier, only, write, **llm_options)
    from dimobench.verify.verdicts import verify_offline

    return verify_offline(path, only, embedder, write, plan_checks)
