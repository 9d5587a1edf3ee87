"""Offline rendering: turn a turn spec into text from the catalog's templates.

The renderer never decides what is true; it only writes the text for a spec the plan made. It keeps a
shuffle bag per template pool so a persona cycles through every template before repeating one, and a set of
used user texts so a long dialogue does not repeat itself.

Catalogs with ``text_rules: "v3"`` also get composed turns (:meth:`Renderer.render_act`: an optional lead, one
of an act's contexts, one of its asks) and typed slots filled from the persona's record: ``{price}`` in the
currency of the persona's city, ``{clock}`` inside the hours ``{time_of_day}`` names, the pronouns of
``{friend}`` from the catalog's recorded gender. Older catalogs keep their exact bytes.
"""

from __future__ import annotations

import random
import re
from datetime import datetime
from functools import lru_cache

from dimobench.catalog import (
    LONG_HELD,
    MONTHS,
    WEEKDAYS,
    Act,
    BarredWords,
    Catalog,
    Exchange,
    at_hour,
    in_season,
    occasion_gender_clash,
)
from dimobench.generate.clock import (
    EARLY_DAYS,
    HOURS,
    NIGHT_FROM,
    NOW_PART,
    PAST_MONTH,
    PAST_PART,
    PAST_PART_FROM,
    PAST_THIS_DAY,
    template_tenses,
)
from dimobench.generate.persona_slots import Price, price_amount

_OPENERS = ("Quick one:", "Okay, next thing:", "Random question:", "Hey again.", "One more thing:",
            "Morning!", "Update:", "So,", "Hi!", "Different topic:", "Small thing:", "Hello again,")


FRESH_DRAWS = 6
"""Draws of an act that take only contexts the persona has not told, before a told one may be told again."""
LEAD_SHARE = 1 / 3
"""Share of composed turns that open with one of the catalog's leads."""
_PRONOUNS = {"f": {"he": "she", "them": "her", "their": "her"}, "m": {"he": "he", "them": "him", "their": "his"}}


class Renderer:
    """Fills templates for one persona with a seeded generator of its own."""

    def __init__(self, catalog: Catalog, rng: random.Random, persona_first_name: str,
                 reserved_names: set[str], home_city: str | None = None, friends: list[str] | None = None) -> None:
        """``home_city`` fills ``{city}``: the persona's own city (a random catalog city only without one);
        ``friends``, when given, are the only names ``{friend}`` and ``{friend2}`` take (the persona's circle)."""
        self.catalog, self.rng, self.name, self.home_city = catalog, rng, persona_first_name, home_city
        self._friends = list(friends) if friends else [n for n in catalog.first_names if n not in reserved_names]
        self._bags: dict[str, list[int]] = {}
        self.used_user: set[str] = set()
        self.hour: int | None = None
        self.minute = 0
        """The hour of the turn being written (catalog v3: ``{time_of_day}`` is a part of today already begun,
        since most cues tell what the user did "this evening")."""
        self.barred: BarredWords | None = None
        """Words the persona would not say of its own life now (``LatentPlan.barred``): a text saying one, or
        whose reply does, is drawn again."""
        self._told: set[str] = set()
        """Act contexts this persona has told. One with an occasion's own day, time, price, count or friend, or one
        that claims a first (:data:`ONE_OFF`), or any of a ``once`` act (:meth:`Act.occasion`), is not told again
        while any other turn can be written ("pledged £1,200" then "pledged £600"); any other is told again only
        after six draws found no untold one."""
        self._said: dict[str, int] = {}
        """Composed turns this persona has said, without their lead -> when last said (:attr:`_used`)."""
        self._left: dict[str, tuple[int, list[Act]]] = {}
        """Acts of a :meth:`render_fresh_act` key this persona has told nothing of yet, with the size of
        :attr:`_touched` when they were last sorted out (it only grows: no new act touched, nothing to sort)."""
        self._touched: set[int] = set()
        """Acts (by id: the catalog holds them while this renderer lives) with a context this persona has told."""
        self._act_months: dict[int, frozenset[int]] = {}
        """:func:`_months` of each act by id, so the hot path does not rebuild its key tuples every turn."""
        self._pairs: set[tuple[str, str]] = set()
        """(context, ask) templates this persona has said together."""
        self._composed = 0
        """Composed turns written so far (the clock of :attr:`_said` and :attr:`_used`)."""
        self._used: dict[str, int] = {}
        """Act contexts, asks and replies this persona has used -> the composed turn that last used them (0, 1, ...). A
        context or ask is drawn from the least recently used of its act (:meth:`_stalest`): an ask not yet asked
        is taken first, so one reply does not come back word for word while another ask of the act is left
        (blind read of seed 1911: the same Komoot reply three times in one dialogue), and once all were used,
        repeats are spread evenly instead of one ask coming back ten times in an XL dialogue (session 26)."""
        self._kept: dict[tuple[str, ...], str] = {}
        """Fixed parts (``StateEntry.fixed_parts``) as first drawn for this persona: (part name, its values) ->
        value."""
        self.month: int | None = None
        """The month of the turn being written (catalog v3: ``{month}`` is this month, and a text with a seasonal
        word of other months, :data:`dimobench.catalog.SEASONAL`, is drawn again)."""
        self.today: str | None = None
        self.day: int | None = None
        """The day of the month of the turn being written (catalog v3, :meth:`_timely`)."""
        """The weekday of the turn being written (catalog v3: a ``{weekday}`` is never today's: "this Saturday"
        and "on Saturday" said on a Saturday are ambiguous at best)."""

    def at(self, timestamp: str) -> None:
        """Write the next turns as of ``timestamp`` (ISO 8601): its hour and month (catalog v3 only)."""
        if self.catalog.text_rules == "v3":
            self.hour, self.month = int(timestamp[11:13]), int(timestamp[5:7])
            self.minute, self.day = int(timestamp[14:16]), int(timestamp[8:10])
            self.today = WEEKDAYS[datetime.fromisoformat(timestamp).weekday()]

    def _fits(self, user: str, reply: str) -> bool:
        """New for this persona, and allowed now (:meth:`_allowed`)."""
        return user not in self.used_user and self._allowed(user, reply)

    def _allowed(self, user: str, reply: str) -> bool:
        """In season (v3: no snow in July), at an hour its words fit (v3: no "winding down before bed" at 08:13),
        and saying nothing the persona's states bar (v3: no cheese from a vegan)."""
        said = f"{user} {reply}"
        return ((self.month is None or in_season(said, self.month))
                and (self.hour is None or at_hour(user, self.hour))
                and (self.barred is None or not self.barred.found_in(said))
                and (self.catalog.text_rules != "v3" or not occasion_gender_clash(said, self.catalog.genders)))

    def _timely(self, template: str) -> bool:
        """Not a past "this {weekday}" on a Monday (no day of the week is past yet), a past "this {month}" in its
        first ``EARLY_DAYS`` days, a past "this {time_of_day}" before ``PAST_PART_FROM`` o'clock, nor a present one
        late at night, when no part of the day is left (v3: :meth:`at` sets the day and hour; :mod:`.clock`)."""
        if self.today is None or self.day is None or self.hour is None or "{" not in template:
            return True
        return not ((self.today == WEEKDAYS[0] and "this {weekday}" in template and PAST_THIS_DAY.search(template))
                    or (self.day <= EARLY_DAYS and "{month}" in template and PAST_MONTH.search(template))
                    or (self.hour < PAST_PART_FROM and "{time_of_day}" in template and PAST_PART.search(template))
                    or (not NIGHT_FROM > self.hour >= 7 and "{time_of_day}" in template and NOW_PART.search(template)))

    def _draw(self, key: str, pool: list[Exchange]) -> Exchange:
        return pool[self._draw_index(key, len(pool))]

    def _slots(self, extra: dict[str, str], template: str = "") -> dict[str, str]:
        s = self.catalog.slots
        friend, friend2 = self.rng.sample(self._friends, 2)
        values = {
            "name": self.name, "friend": friend, "friend2": friend2,
            "city": self.home_city or self.rng.choice(self.catalog.cities),
            **{k: self.rng.choice(v) for k, v in s.items()},
        }
        if self.catalog.text_rules == "v3":
            values.update(self._typed(values, *template_tenses(template)))
        values.update(extra)
        return values

    def _typed(self, values: dict[str, str], now: bool = False, clock_now: bool = False,
               clock_past: bool = False, past_day: bool = False) -> dict[str, str]:
        typed: dict[str, str] = {}
        if self.hour is not None:
            # a part of the day already begun ("what I did this morning"); a text in the present tense ("I'm
            # setting it up this morning", ``NOW_PART``) gets the part the turn is in, the latest begun, so it is
            # not written at 22:12 (the seed-1481 blind read)
            begun = [w for w in self.catalog.slots.get("time_of_day", []) if HOURS.get(w, (24, 24))[0] <= self.hour]
            typed["time_of_day"] = values["time_of_day"] = (max(begun, key=lambda w: HOURS[w][0], default="morning")
                                                            if now else self.rng.choice(begun or ["morning"]))
        if past_day and self.today is not None and self.today != WEEKDAYS[0]:  # a day of this week already past
            typed["weekday"] = values["weekday"] = self.rng.choice(WEEKDAYS[:WEEKDAYS.index(self.today)])
        elif self.today is not None and values.get("weekday") == self.today:
            # "going to get our jabs on Saturday" said on a Saturday (the seed-1911 blind read): another day
            typed["weekday"] = values["weekday"] = WEEKDAYS[(WEEKDAYS.index(self.today) + 1) % 7]
        if self.month is not None:
            typed["month"] = values["month"] = MONTHS[self.month - 1]
            typed["past_month"], typed["later_month"] = MONTHS[(self.month - 4) % 12], MONTHS[(self.month + 2) % 12]
        first, last = HOURS.get(values.get("time_of_day", ""), (9, 17))
        hour = self.rng.randint(first, last)
        if clock_now and self.hour is not None:  # "It's {clock} and I'm still answering messages": the turn's hour
            hour = self.hour
        minutes: tuple[str, ...] = ("00", "15", "30", "45")
        if clock_past and self.hour is not None and hour >= self.hour:  # earlier today, not later (CLOCK_PAST)
            hour = self.hour
            minutes = tuple(m for m in minutes if int(m) <= self.minute) or ("00",)
        typed["clock"] = f"{hour}:{self.rng.choice(minutes)}"
        currency = self.catalog.currencies.get(self.home_city or values["city"], "")
        scale = self.catalog.price_scale.get(currency.strip(), 1)
        typed["price"] = Price(f"{currency}{price_amount(values.get('price', '0'), scale)}", currency, scale,
                                self.catalog.price_bands, self.rng)
        pronouns = _PRONOUNS.get(self.catalog.genders.get(values["friend"], ""), {})
        typed.update({f"friend_{k}": v for k, v in pronouns.items()})
        return typed

    def render(self, key: str, pool: list[Exchange], **extra: str) -> tuple[str, str]:
        """Render one exchange from ``pool``; retries so the user text is new for this persona."""
        spare: tuple[str, str] | None = None
        for _ in range(12):
            ex = self._draw(key, pool)
            values = self._slots(extra, ex.user)
            user, reply = _fill(ex.user, values), _fill(ex.assistant, values)
            timely = self._timely(ex.user)
            if timely and self._fits(user, reply):
                break
            spare = spare or ((user, reply) if timely and self._allowed(user, reply) else None)
        else:
            if self.catalog.text_rules == "v3":
                user, reply = spare or (user, reply)
                user = self._reopen(user)
            else:
                user = f"{self.rng.choice(_OPENERS)} {user[0].lower()}{user[1:]}" if user[:1].isupper() else user
        self.used_user.add(user)
        return user, reply


    def render_act(self, key: str, acts: list[Act], parts: dict[str, list[str]] | None = None,
                   leads: list[str] | None = None, fixed: list[str] | None = None, new_to_it: bool = False,
                   **extra: str) -> tuple[str, str]:
        """Compose one turn from ``acts``: maybe a lead, one act's context, then one of its asks; the reply is
        the ask's. ``parts`` fill the state's own slots, those named in ``fixed`` with one value per persona;
        ``leads``, when given, are the only openers and one is always used; ``new_to_it``: the persona came to
        this state by a drift, so it tells no context of a state held for years (:data:`LONG_HELD`) while its act
        has another. Retries so the user text is new for this persona."""
        made = self._render_act(key, acts, parts, leads, fixed, new_to_it, False, **extra)
        assert made is not None
        return made

    def render_untold_act(self, key: str, acts: list[Act], parts: dict[str, list[str]] | None = None,
                          fixed: list[str] | None = None, new_to_it: bool = False) -> tuple[str, str] | None:
        """:meth:`render_act` telling only a context this persona has not told and that fits now, or None where the
        first draws find none (catalog v3: a state with nothing new to say stays quiet rather than repeat itself)."""
        return self._render_act(key, acts, parts, None, fixed, new_to_it, True)

    def render_fresh_act(self, key: str, acts: list[Act]) -> tuple[str, str] | None:
        """A turn from one of ``acts`` (no parts, no leads of its own) that this persona has told nothing of, that
        fits now, or None where the first draws find none (catalog-v3's filler acts: a curiosity is not asked
        about again in other words while another is left, and then :meth:`render_act` retells)."""
        seen, left = self._left.get(key, (-1, acts))
        if seen != len(self._touched):
            left = [act for act in left if id(act) not in self._touched]
            self._left[key] = (len(self._touched), left)
        # an act whose words are all out of season now waits for another month: an XL persona's last untold acts
        # are mostly such (snow, Christmas), and drawing them one by one made generation twice as slow
        month, known = self.month, self._act_months.get  # (an act out of season all year is looked up anew)
        now = left[:] if month is None else [act for act in left if month in (known(id(act)) or self._months(act))]
        if not now:
            return None
        # drawn among the acts left only (a bag per size: it shrinks by one act a turn), not through the told ones
        return self._render_act(f"{key}#{len(now)}", now, None, None, None, False, True)

    def _months(self, act: Act) -> frozenset[int]:
        found = self._act_months.get(id(act))
        if found is None:  # the catalog holds its acts as long as this renderer lives, so no id is reused
            found = self._act_months[id(act)] = _months(tuple(act.context),
                                                       tuple(f"{a.user} {a.assistant}" for a in act.asks))
        return found

    def _render_act(self, key: str, acts: list[Act], parts: dict[str, list[str]] | None,
                    leads: list[str] | None, fixed: list[str] | None, new_to_it: bool, fresh_only: bool,
                    **extra: str) -> tuple[str, str] | None:
        kept = {name: (name, *(parts or {})[name]) for name in fixed or ()}  # a part is kept per its values
        for name, k in kept.items():
            if k not in self._kept:
                self._kept[k] = self.rng.choice((parts or {})[name])
        # ((retold?, when its body was last said), body, reply, act, context, ask, the reply's template)
        spare: tuple[tuple[bool, int], str, str, Act, str, Exchange, str] | None = None
        for attempt in range(FRESH_DRAWS if fresh_only else 24):
            act = acts[self._draw_index(key, len(acts))]
            for _ in range(len(acts) if attempt < FRESH_DRAWS else 0):  # first, an act with something left to tell
                if not self._told.issuperset(act.context):
                    break
                act = acts[self._draw_index(key, len(acts))]
            # the first draws take only contexts this persona has not told (the same back injury is not news
            # twice), the next any context but an occasion already told, the last any at all: a turn can still
            # be written when the untold ones are out of season or barred now (an occasion is then told again
            # only as the spare below, when nothing else is allowed)
            told_as_new = ([c for c in act.context if not LONG_HELD.search(c)] or act.context) if new_to_it \
                else act.context
            untold = [c for c in told_as_new if c not in self._told]
            retellable = [c for c in told_as_new if not (c in self._told and act.occasion(c))]
            fresh = attempt < FRESH_DRAWS
            pool = untold if untold and fresh else retellable if retellable and attempt < 9 else told_as_new
            # what fits the day and hour now (v3: a past "this morning" at 07:40 is drawn again, and a fresh act
            # found no context to tell would be retold instead)
            pool = [c for c in pool if self._timely(c)] or pool
            # the least recently used context, then an ask it was not yet said with (the first draws; a random
            # one after that, should the stalest be out of season or barred now)
            context = pool[self._stalest(pool)] if attempt < 12 else self.rng.choice(pool)
            asks = [a for a in act.asks if (context, a.user) not in self._pairs] or act.asks
            if fresh:  # an ask this persona never asked, while its act has one (the same junction question twice)
                asks = [a for a in asks if a.user not in self._used] or asks
            ask = asks[self._stalest([a.user for a in asks])] if attempt < 12 else self.rng.choice(act.asks)
            if leads:
                lead = self.rng.choice(leads)
            else:
                lead = (self.rng.choice(self.catalog.leads)
                        if self.catalog.leads and self.rng.random() < LEAD_SHARE else "")
            template = f"{context} {ask.user}"
            values = self._slots({**{k: self._kept[kept[k]] if k in kept else self.rng.choice(v)
                                     for k, v in (parts or {}).items()}, **extra}, template)
            body = f"{_fill(context, values)} {_fill(ask.user, values)}"
            user = f"{lead} {body}" if lead else body
            # the reply the persona heard least recently (a catalog-v3 ask may have several, ``Exchange.also``)
            replies = ask.replies()
            answer = replies[self._stalest(replies)] if ask.also else ask.assistant
            reply = _fill(answer, values)
            event = self.catalog.text_rules == "v3" and act.occasion(context)
            retold = event and context in self._told
            # new means new without its lead: the same sentence after "Let me run something by you." is said again
            timely = self._timely(template)
            if not retold and not (fresh and context in self._told) and body not in self._said \
                    and timely and self._fits(user, reply):
                break
            rank = (retold, self._said.get(body, -1))
            if timely and self._allowed(user, reply) and (spare is None or rank < spare[0]):
                # the allowed draw that tells no occasion again and was said longest ago (never: best)
                spare = (rank, body, reply, act, context, ask, answer)
        else:
            if fresh_only:
                return None
            # every draw was said before or not allowed now: reopen the spare (an occasion told again only if
            # nothing else was allowed) with a lead of its own, never on top of the lead it had (v3 catalogs only
            # compose acts, so the older suites' bytes do not depend on this)
            if spare is not None:
                _, body, reply, act, context, ask, answer = spare
            for _ in range(4):  # a lead it was not said with
                user = self._reopen(body, leads)
                if user not in self.used_user:
                    break
        self._tell(act, context, acts)
        self._pairs.add((context, ask.user))
        self._said[body] = self._used[context] = self._used[ask.user] = self._used[answer] = self._composed
        self._composed += 1
        self.used_user.add(user)
        return user, reply

    def _stalest(self, texts: list[str]) -> int:
        """The index of one of ``texts`` drawn from the older half by last use (never used counts oldest)."""
        age = sorted(self._used.get(t, -1) for t in texts)
        cut = age[(len(age) - 1) // 2]
        return self.rng.choice([i for i, t in enumerate(texts) if self._used.get(t, -1) <= cut])

    def _tell(self, act: Act, context: str, acts: list[Act]) -> None:
        """Record ``context`` as told; an occasion's other contexts in the same act tell the same occasion in other
        words (the jury summons, the savings plan), so they count as told with it, and so do the contexts of the
        other acts of its :attr:`Act.group` among ``acts`` and the catalog's filler acts (those out of season now
        too: the seed-902 test met "the clocks last went back" in August, then "caught out by the clocks" in
        October)."""
        self._told.add(context)
        self._touched.add(id(act))
        if act.occasion(context):
            self._told.update(c for c in act.context if act.occasion(c))
        if act.group:
            for other in (*acts, *self.catalog.filler_acts):
                if other.group == act.group:
                    self._told.update(other.context)
                    self._touched.add(id(other))

    def _reopen(self, user: str, leads: list[str] | None = None) -> str:
        """A user text already said, made new with one of ``leads`` when the turn has its own (a drift's trial
        turn opens with a trial lead however it was found), else one of the catalog's leads (they end a sentence
        and carry no time of day, unlike the older openers)."""
        return f"{self.rng.choice(leads or self.catalog.leads or list(_OPENERS))} {user}"

    def _draw_index(self, key: str, size: int) -> int:
        bag = self._bags.get(key)
        if not bag:
            bag = list(range(size))
            self.rng.shuffle(bag)
            self._bags[key] = bag
        return bag.pop()


@lru_cache(maxsize=4096)
def _months(contexts: tuple[str, ...], asks: tuple[str, ...]) -> frozenset[int]:
    """The months in which one of an act's ``contexts`` and one of its ``asks`` (each with its reply) are in season."""
    return frozenset(m for m in range(1, 13)
                     if any(in_season(c, m) for c in contexts) and any(in_season(a, m) for a in asks))


_OWN_KIN = re.compile(r"\btheir(?= (?:parents'?|mother|father|siblings'?|partner|spouse|kids|children|family|"
                      r"brothers?|sisters?|mum|dad)\b)")
"""A habit phrase's "their" that is the subject's own family ("phoned their mother daily"), unlike "fed their
animals" (the friends'): the catalog writes habits of no one in particular."""


def habit_of(habit: str, catalog: Catalog, who: str | None) -> str:
    """``habit`` said of ``who``: the user (None: "phoned my mother daily") or a person the user names (their
    name's recorded gender: "her mother"; "their" when none is recorded). Older catalogs keep their bytes."""
    if catalog.text_rules != "v3":
        return habit
    own = "my" if who is None else _PRONOUNS.get(catalog.genders.get(who, ""), {}).get("their", "their")
    return _OWN_KIN.sub(own, habit)


def _fill(template: str, values: dict[str, str]) -> str:
    text = template.format_map(values)
    return text[0].upper() + text[1:] if text else text
