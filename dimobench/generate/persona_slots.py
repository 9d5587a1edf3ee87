"""What a persona's record binds the slots of its turns to: its city, its circle of friends and its currency."""

from __future__ import annotations

import random

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


class Price(str):
    """A ``{price}``: the plain slot is the amount drawn from the ``price`` list; ``{price:small}`` draws from the
    catalog's ``price_bands["small"]`` instead, so a bag of bread and a sofa do not cost the same."""

    _money: tuple[str, int, dict[str, list[str]], random.Random]

    def __new__(cls, plain: str, currency: str, scale: int, bands: dict[str, list[str]],
                rng: random.Random) -> Price:
        """The amount ``plain``, with what ``{price:BAND}`` needs to draw another in ``currency``."""
        value = super().__new__(cls, plain)
        value._money = (currency, scale, bands, rng)
        return value

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)
        currency, scale, bands, rng = self._money
        return f"{currency}{price_amount(rng.choice(bands[spec]), scale)}"


def price_amount(base: str, scale: int) -> str:
    """``base`` units times ``scale``, rounded to two significant figures and written with thousands commas."""
    value = float(base) * scale
    if value >= 100:
        digits = len(str(int(value))) - 2
        value = round(value / 10**digits) * 10**digits
    return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}"
