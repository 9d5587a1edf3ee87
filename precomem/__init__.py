"""PreCoMem reference memory engine: confidence-weighted beliefs updated by reliability-adjusted surprisal.

Importable on its own (no dependency on dimobench's CLI)::

    from precomem import PreCoMem, PreCoMemConfig
    mem = PreCoMem(PreCoMemConfig())
    mem.observe("I throw loud parties every weekend", turn=1)
    mem.recall("what does the user do on weekends?")
"""

from precomem.agents import Candidate, Proposition, RuleAgents, SubAgents, Target
from precomem.config import ClassBand, PreCoMemConfig
from precomem.engine import PreCoMem
from precomem.records import RecallItem, Regime, Update

__all__ = [
    "Candidate",
    "ClassBand",
    "PreCoMem",
    "PreCoMemConfig",
    "Proposition",
    "RecallItem",
    "Regime",
    "RuleAgents",
    "SubAgents",
    "Target",
    "Update",
]
