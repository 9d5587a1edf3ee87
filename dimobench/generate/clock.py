"""The dialogue's clock: when each turn is said (a stage-3 helper of :mod:`dimobench.generate.stages.dialogue`)."""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from functools import lru_cache

HOURS: dict[str, tuple[int, int]] = {
    "morning": (7, 10), "mid-morning": (10, 11), "lunchtime": (12, 13), "early afternoon": (13, 14),
    "afternoon": (13, 16), "late afternoon": (16, 17), "early evening": (17, 18), "evening": (18, 20),
    "late evening": (21, 22),
}
"""The hours (first, last) a ``{time_of_day}`` word covers; a v3 ``{clock}`` is drawn inside them."""
CLOCK_SLOT_NOW = re.compile(r"\b(?:it's|it is) \{clock\}", re.IGNORECASE)
"""A template telling its ``{clock}`` as the time now."""
CLOCK_PAST = re.compile(r"\b(?:\w{3,}ed|got|met|rang|was|were)\b[^.?!]*\{clock\}", re.IGNORECASE)
"""A template telling what happened at its ``{clock}`` (v3: earlier today, so not later than the turn's own time;
the blind read of seed 2637: "I minted an NFT ... at 12:45" sent at 12:17)."""
CLOCK_NOT_PAST = re.compile(r"\{weekday\}|\btomorrow\b|\buntil \{clock\}|\bI've got\b", re.IGNORECASE)
"""What makes a :data:`CLOCK_PAST` match another day or a plan ("moved to {weekday} at {clock}")."""
NOW_PART = re.compile(r"(?:\b(?:I'm|I am|we're|we are|is|are|am|I've got)\b|'s \w+ing\b)[^.?!]*\{time_of_day\}",
                      re.IGNORECASE)
"""A sentence in the present tense about this part of the day: its ``{time_of_day}`` is the part the turn is in
(seed 2747's blind read: "Mum's teaching me her shepherd's pie this lunchtime" at 22:07)."""
_PAST = (r"\b(?:\w{3,}ed|got|met|rang|was|were|read|sent|bought|went|did|had|took|came|ran|saw|made|spent|lost|won"
         r"|found|paid|sold|heard)\b")
PAST_THIS_DAY = re.compile(r"\b(?:was|were)\b[^.?!]*\bthis \{weekday\}", re.IGNORECASE)
"""A template telling what happened "this {weekday}": a day of this week already past (v3; the blind read of seed
2697: "our bins were skipped this Friday" on a Thursday). Only the passive past: "offered to spot me this
{weekday}" is a plan."""
PAST_MONTH = re.compile(_PAST + r"(?:(?!\b(?:for|starting|until|by|next)\b)[^.?!])*\b(?:in|this) \{month\}",
                        re.IGNORECASE)
"""A template telling what happened in this ``{month}`` so far: not drawn in the month's first :data:`EARLY_DAYS`
days (v3; the blind read of seed 2697: "got through three books in January" on 7 January)."""
PAST_PART = re.compile(_PAST + r"[^.?!]*\{time_of_day\}", re.IGNORECASE)
"""A template telling what happened this ``{time_of_day}``: not drawn before :data:`PAST_PART_FROM` o'clock, when
the morning has barely begun (v3; the blind read of seed 2731: "the deli sold me za'atar this morning" at 07:27)."""
NIGHT_FROM = 23
"""From this hour to 07:00 no part of the day is "this {time_of_day}" in the present tense (:data:`NOW_PART`; the
blind read of seed 2811: "we're doing the flea market this evening" at 23:38)."""
PAST_PART_FROM = 9
"""The hour from which a :data:`PAST_PART` template is drawn."""
EARLY_DAYS = 10
"""The days of a month in which a :data:`PAST_MONTH` template is not drawn."""


@lru_cache(maxsize=1 << 14)
def template_tenses(template: str) -> tuple[bool, bool, bool, bool]:
    """Whether ``template`` tells a part of the day as now (:data:`NOW_PART`), its clock time as now
    (:data:`CLOCK_SLOT_NOW`), its clock time as already past (:data:`CLOCK_PAST`), a day of this week as past
    (:data:`PAST_THIS_DAY`): the renderer's typed slots follow them (remembered: asked at every draw)."""
    clock = "{clock}" in template  # most templates have none: skip the clock patterns
    past = clock and bool(CLOCK_PAST.search(template)) and not CLOCK_NOT_PAST.search(template)
    past_day = "this {weekday}" in template and bool(PAST_THIS_DAY.search(template))
    return bool(NOW_PART.search(template)), clock and bool(CLOCK_SLOT_NOW.search(template)), past, past_day


SESSION_HOURS = (7, 8, 9, 12, 13, 18, 19, 20, 21, 22)
"""The hours a session starts in."""
SLEEP_HOURS: dict[str, tuple[int, ...]] = {
    "early_riser": (6, 7, 8, 9, 12, 13, 16, 17, 18), "night_owl": (10, 11, 12, 13, 18, 19, 20, 21, 22, 23),
    "nocturnal_worker": (7, 8, 15, 16, 17, 18, 19, 20),
}
"""Catalog v3: the hours a session starts in while the persona holds one of these ``sleep_schedule`` states (the
blind read of seed 2811: a lark "asleep by 9pm" chatting at 22:20). A session lasts up to about an hour, so a lark's
last one starts by 19:00."""


class Clock:
    """Sessions of a few turns, minutes apart inside a session and hours to days between sessions."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.now = datetime(2024, 1, 1, 8, 0) + timedelta(days=rng.randint(0, 364), minutes=rng.randint(0, 720))
        self.session = 1
        self._left = rng.randint(4, 12)

    def tick(self, hours: tuple[int, ...] = SESSION_HOURS) -> tuple[int, str]:
        """Advance to the next turn; return its session number and ISO 8601 timestamp. A new session starts in
        one of ``hours``."""
        if self._left == 0:
            self.session += 1
            self._left = self.rng.randint(4, 12)
            gap = timedelta(hours=self.rng.randint(8, 96))
            start = (self.now + gap).replace(hour=self.rng.choice(hours),
                                             minute=self.rng.randint(0, 59))
            # snapping to a time of day may land before the last turn; sessions then start a day later
            self.now = start if start > self.now + timedelta(hours=2) else start + timedelta(days=1)
        else:
            self.now += timedelta(minutes=self.rng.randint(1, 6), seconds=self.rng.randint(0, 59))
        self._left -= 1
        return self.session, self.now.isoformat(timespec="seconds")
