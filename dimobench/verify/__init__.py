"""Stage 6: offline verification of QA items against the suite's text and latent plan (DESIGN.md section 3).

Import ``verify_suite`` from here; the embedding model (torch) loads only when a suite is judged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dimobench.verify.runner import VerifyResult

__all__ = ["CRITERIA_NAMES", "VerifyResult", "verify_suite"]

CRITERIA_NAMES = ("supported", "temporally_valid", "implicit", "unambiguous", "type_faithful",
                  "confounder_robust")


def verify_suite(path: Any, verifier: str = "offline", **kwargs: Any) -> VerifyResult:
    """Verify a suite in place; see :func:`dimobench.verify.runner.verify_suite`."""
    from dimobench.verify.runner import verify_suite as _run

    return _run(path, verifier, **kwargs)
