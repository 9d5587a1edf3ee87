"""What a persona's record binds the slots of its turns to: its city and its circle of friends."""

from __future__ import annotations

from dimobench.catalog import Catalog
from dimobench.generate.config import newer_rules
from dimobench.suite.schema import Persona


def home_city(persona: Persona) -> str | None:
    """The persona's own city (what ``{city}`` means under the validity rules)."""
    return str(persona.profile.get("city") or "") or None


def city_slot(persona: Persona, qa_rules: str, catalog: Catalog) -> str | None:
    """What ``{city}`` is bound to: the persona's own city under the validity rules or with a catalog of text rules
    v3 (whose lints promise it); None (a city drawn per turn) for the v1/v2 catalogs' default suites, which keep
    their bytes."""
    return home_city(persona) if newer_rules(qa_rules, catalog.text_rules) else None


def friends_of(persona: Persona) -> list[str] | None:
    """The persona's circle of friends (``profile["friends"]``, catalog v3), or None without one."""
    friends = persona.profile.get("friends")
    return [str(f) for f in friends] if isinstance(friends, list) and len(friends) >= 2 else None
