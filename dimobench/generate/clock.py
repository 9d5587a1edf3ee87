"""The dialogue's clock: when each turn is said (a stage-3 helper of :mod:`dimobench.generate.stages.dialogue`)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta


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
