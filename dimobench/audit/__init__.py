"""Validity audit of a suite: can it be answered without memory, and are its labels right?

:func:`audit_suites` runs no-context attacks (:mod:`~dimobench.audit.attacks`), shortcut baselines that read the
dialogue without understanding it (:mod:`~dimobench.audit.shortcuts`), per-item flags from the latent plan
(:mod:`~dimobench.suite.flags`), text lints and diversity (:mod:`~dimobench.audit.diversity`), and checks the
card's gates (:mod:`~dimobench.audit.card`). DESIGN.md section 3, "Validity by construction".
"""

from __future__ import annotations

from dimobench.audit.card import DEFAULT_GATES, AuditReport
from dimobench.audit.check import audit_suites

__all__ = ["DEFAULT_GATES", "AuditReport", "audit_suites"]
