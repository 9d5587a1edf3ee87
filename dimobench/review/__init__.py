"""Human review of a suite: stratified blind sheets, agreement (kappa, alpha), adjudication, merge.

DESIGN.md section 6. The steps are :func:`sample_suite`, :func:`score_sheets`, :func:`adjudicate_sheets` and
:func:`merge_adjudication`; the metrics live in :mod:`dimobench.agreement`.
"""

from __future__ import annotations

from dimobench.review.workflow import adjudicate_sheets, merge_adjudication, sample_suite, score_sheets

__all__ = ["adjudicate_sheets", "merge_adjudication", "sample_suite", "score_sheets"]
