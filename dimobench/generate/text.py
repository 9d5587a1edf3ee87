"""Offline rendering: turn a turn spec into text from the catalog's templates.

The renderer never decides what is true; it only writes the text for a spec the plan made. It keeps a
shuffle bag per template pool so a persona cycles through every template before repeating one, and a set of
used user texts so a long dialogue does not repeat itself.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from dimobench.catalog import Catalog, Exchange
from dimobench.suite.schema import Persona

_OPENERS = ("Quick one:", "Okay, next thing:", "Random question:", "Hey again.", "One more thing:",
            "Morning!", "Update:", "So,", "Hi!", "Different topic:", "Small thing:", "Hello again,")


class Renderer:
    """Fills templates for one persona with a seeded generator of its own."""

    def __init__(self, catalog: Catalog, rng: random.Random, persona_first_name: str,
                 reserved_names: set[str], home_city: str | None = None) -> None:
        """``home_city`` fills ``{city}``: the persona's own city (a random catalog city only without one)."""
        self.catalog, self.rng, self.name, self.home_city = catalog, rng, persona_first_name, home_city
        self._friends = [n for n in catalog.first_names if n not in reserved_names]
        self._bags: dict[str, list[int]] = {}
        self.used_user: set[str] = set()

    def _draw(self, key: str, pool: list[Exchange]) -> Exchange:
        bag = self._bags.get(key)
        if not bag:
            bag = list(range(len(pool)))
            self.rng.shuffle(bag)
            self._bags[key] = bag
        return pool[bag.pop()]

    def _slots(self, extra: dict[str, str]) -> dict[str, str]:
        s = self.catalog.slots
        friend, friend2 = self.rng.sample(self._friends, 2)
        values = {
            "name": self.name, "friend": friend, "friend2": friend2,
            "city": self.home_city or self.rng.choice(self.catalog.cities),
            **{k: self.rng.choice(v) for k, v in s.items()},
        }
        values.update(extra)
        return values

    def render(self, key: str, pool: list[Exchange], **extra: str) -> tuple[str, str]:
        """Render one exchange from ``pool``; retries so the user text is new for this persona."""
        for _ in range(12):
            ex = self._draw(key, pool)
            values = self._slots(extra)
            user = _fill(ex.user, values)
            if user not in self.used_user:
                break
        else:
            user = f"{self.rng.choice(_OPENERS)} {user[0].lower()}{user[1:]}" if user[:1].isupper() else user
        self.used_user.add(user)
        return user, _fill(ex.assistant, values)


def home_city(persona: Persona) -> str | None:
    """The persona's own city (what ``{city}`` means under the validity rules)."""
    return str(persona.profile.get("city") or "") or None


def _fill(template: str, values: dict[str, str]) -> str:
    text = template.format_map(values)
    return text[0].upper() + text[1:] if text else text


class Clock:
    """Sessions of a few turns, minutes apart inside a session and hours to days between sessions."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.now = datetime(2024, 1, 1, 8, 0) + timedelta(days=rng.randint(0, 364), minutes=rng.randint(0, 720))
        self.session = 1
        self._left = rng.randint(4, 12)

    def tick(self) -> tuple[int, str]:
        """Advance to the next turn; return its session number and ISO 8601 timestamp."""
        if self._left == 0:
            self.session += 1
            self._left = self.rng.randint(4, 12)
            gap = timedelta(hours=self.rng.randint(8, 96))
            start = (self.now + gap).replace(hour=self.rng.choice((7, 8, 9, 12, 13, 18, 19, 20, 21, 22)),
                                             minute=self.rng.randint(0, 59))
            # snapping to a time of day may land before the last turn; sessions then start a day later
            self.now = start if start > self.now + timedelta(hours=2) else start + timedelta(days=1)
        else:
            self.now += timedelta(minutes=self.rng.randint(1, 6), seconds=self.rng.randint(0, 59))
        self._left -= 1
        return self.session, self.now.isoformat(timespec="seconds")
