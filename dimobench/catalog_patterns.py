"""Text patterns the catalog's rules share: content words and stems, slot names, the months a seasonal word
fits, the words a state bars, a template with its slots as wildcards, and occasions only one gender has. Kept
apart from :mod:`dimobench.catalog` (which re-exports them) so that module stays readable in one sitting."""

from __future__ import annotations

import re
import string
from bisect import bisect_right
from functools import lru_cache
from itertools import accumulate

_WINTER, _SUMMER = frozenset({11, 12, 1, 2, 3}), frozenset({5, 6, 7, 8, 9})
SEASONAL: tuple[tuple[re.Pattern[str], frozenset[int]], ...] = tuple(
    (re.compile(rf"\b({w})\b", re.IGNORECASE), m) for w, m in (
    (r"snow(?!ball)\w*|frost\w*|sledges?|sledging|icy|mince pies?|thermals|gritters?", _WINTER),
    (r"christmas\w*|advent calendars?|secret santa|carol singers|carols", frozenset({11, 12})),
    (r"boxing day", frozenset({12})),
    (r"new year'?s eve|harbour countdown|hogmanay", frozenset({11, 12})),
    (r"wimbledon (?:men's |women's )?finals?|wimbledon fortnight", frozenset({6, 7})),
    (r"heatwaves?|sunburn\w*|sunbath\w*|paddling pool|hosepipe ban|sun cream|suncream|sweltering", _SUMMER),
    (r"wasps?", frozenset({5, 6, 7, 8, 9, 10})),
    # what the user sees happening (leaves turning now), not a question about autumn, which fits any month
    (r"autumn leaves|conkers?|fallen leaves|bonfire night|leaves (?:\w+ ){0,8}(?:turning|changing|starting to turn"
     r"|have turned)|(?:changing|turning) (?:colour|red|yellow|gold|orange|brown)", frozenset({9, 10, 11})),
    (r"(?:still|stays?) light (?:well )?(?:after|past) (?:nine|ten|9|10)|light evenings", frozenset({5, 6, 7, 8})),
    (r"garden part(?:y|ies)|barbecues?|bbqs?|warm (?:day|days|evening|evenings|weather)|humid|humidity|muggy",
     frozenset({5, 6, 7, 8, 9})),
    (r"pollen|hay ?fever|bee stings?|stung by a bee|weeding", frozenset({3, 4, 5, 6, 7, 8, 9})),
    (r"daffodils?|bluebells?|blossom", frozenset({2, 3, 4, 5})),
    # the flowers themselves (picked for cordial in early summer), not the cordial or a drink, sold all year
    (r"(?:gathering|picking|foraging|foraged|picked) elderflowers?|elderflowers? for cordial", frozenset({5, 6})),
    (r"clocks (?:go|went|going) forward", frozenset({3})),
    (r"clocks (?:go|went|going) back", frozenset({10})),
    (r"clocks change[sd]?", frozenset({3, 10})),
    (r"picnics?", frozenset({4, 5, 6, 7, 8, 9})),
    # the day is in April: told as coming up in late winter and spring only (a blind read met it in June)
    (r"record store day", frozenset({2, 3, 4})),
    # the ballot's results come out in spring, before the fortnight's queue (a blind read met one in October)
    (r"wimbledon ballot", frozenset({2, 3, 4, 5, 6})),
    # the blind read of seed 2731: a grass-court match in December, Roland Garros as news in January, an outdoor
    # gig in the park in January, summer knitwear put away in November, "the new quarter" in May
    (r"grass[- ]court", frozenset({6, 7})),
    (r"roland garros", frozenset({4, 5, 6})),
    (r"(?:gig|party|concert) in the park", frozenset({5, 6, 7, 8, 9})),
    (r"knitwear I won't wear for months", frozenset({3, 4, 5, 6})),
    (r"new quarter", frozenset({1, 3, 4, 6, 7, 9, 10, 12})),
    # seed 2747's: caught out by the clocks in June, seed potatoes in July, starling murmurations in June
    (r"caught out by the clocks|clocks last went back", frozenset({3, 4, 10, 11})),
    (r"seed potatoes|chit(?:ting)?|early potatoes", frozenset({1, 2, 3, 4})),
    (r"murmurations?", frozenset({10, 11, 12, 1, 2})),
    # seed 2811's: a summer-solstice poster in December, a ten-hour festival day in November, foil behind the
    # radiators in June, "it's 5 degrees" in May, a wood burner fired up again in July
    (r"summer solstice", frozenset({4, 5, 6})),
    (r"at the festival on|support band at the festival", _SUMMER),
    (r"foil behind the radiators|draughty door|sausage-dog draught excluder|log basket|logs by the back door",
     frozenset({10, 11, 12, 1, 2, 3})),
    (r"fire up the wood burner", frozenset({8, 9, 10, 11})),
    (r"it's 5 degrees", frozenset({10, 11, 12, 1, 2, 3, 4})),
    # camping out in the cold months ("a tent for the festival in {later_month}" written in November): never
    (r"(?:tents?|pitches|camping)\b[^.?!]{0,60}\bin (?:October|November|December|January|February|March)\b",
     frozenset()),
))
"""Words that tie a text to months of the (northern) year; a v3 turn is written only in a month they fit."""
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
"""In ``datetime.weekday()`` order (the locale-free twin of ``calendar.day_name``)."""


def _words_pattern(words: list[str]) -> re.Pattern[str]:
    """``words`` as whole words or phrases, a plural ``s`` or ``es`` allowed, a space and a hyphen alike, a straight
    and a curly apostrophe alike (the first that matches at a place wins)."""
    alternatives = "|".join(re.escape(w).replace(r"\ ", "[ -]").replace(r"\-", "[ -]").replace("'", "['’]")
                            for w in words)
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?:e?s)?(?![\w-])", re.IGNORECASE)


@lru_cache(maxsize=4096)
def barred_pattern(words: frozenset[str]) -> re.Pattern[str] | None:
    """One regex finding any of ``words``: whole words or phrases, a plural ``s`` or ``es`` allowed, a space and a
    hyphen alike ("hot desk", "hot-desk"), a straight and a curly apostrophe alike; None for none."""
    if not words:
        return None
    return _words_pattern(sorted(words, key=lambda w: (-len(w), w)))


@lru_cache(maxsize=None)
def _word_pattern(word: str) -> re.Pattern[str]:
    return _words_pattern([word])


class BarredWords:
    """Whether a text says one of ``words`` as :func:`barred_pattern` finds them, tested a word at a time and only
    where the folded text holds the word: one regex of a persona's ~60 barred words took ~10 ms to compile and
    ~50 us a text to search, and generating an XL suite asks ~10,000 times with ~45 word sets."""

    __slots__ = ("_words",)

    def __init__(self, words: frozenset[str]) -> None:
        self._words = tuple((self.fold(w), w) for w in sorted(words))

    @staticmethod
    def fold(text: str) -> str:
        """``text`` as a word's key is looked for in it: lower-case, a hyphen as a space, a curly apostrophe
        straight (any text a :func:`barred_pattern` alternative matches holds its word folded so)."""
        return text.lower().replace("-", " ").replace("’", "'")

    def found_in(self, text: str) -> bool:
        """Whether ``text`` says a word."""
        folded = self.fold(text)
        for key, word in self._words:  # a loop, not any() over a generator: ~60 words, asked ~25,000 times
            if key in folded and _word_pattern(word).search(text):
                return True
        return False

    def count(self, texts: list[str]) -> int:
        """How many of ``texts`` say a word: :meth:`found_in` of each, with each word looked for once in all of
        them joined (stage 1 asks of ~3,000 texts for each background state)."""
        folds = [self.fold(text) for text in texts]
        folded = "\n".join(folds)  # no word holds a line break
        starts = list(accumulate((len(text) + 1 for text in folds), initial=0))
        found: set[int] = set()
        for key, word in self._words:
            at = folded.find(key)
            while at >= 0:
                i = bisect_right(starts, at) - 1
                if i not in found and _word_pattern(word).search(texts[i]):
                    found.add(i)
                at = folded.find(key, starts[i + 1])  # the next text: this one is answered for this word
        return len(found)


@lru_cache(maxsize=4096)
def barred_words(words: frozenset[str]) -> BarredWords | None:
    """:class:`BarredWords` of ``words``; None for none."""
    return BarredWords(words) if words else None


_SEASONAL_STEMS = ("snow", "frost", "sledg", "icy", "mince pie", "thermals", "gritter", "christmas", "advent calendar",
                   "secret santa", "carol", "boxing day", "new year", "harbour countdown", "hogmanay", "wimbledon",
                   "heatwave", "sunburn", "sunbath", "paddling pool", "hosepipe", "sun cream", "suncream", "swelter",
                   "wasp", "conker", "leaves", "bonfire night", "changing", "turning", "light", "garden part",
                   "barbecue", "bbq", "warm", "humid", "muggy", "pollen", "fever", "bee sting", "stung by a bee",
                   "weeding", "daffodil", "bluebell", "blossom", "clocks", "elderflower", "picnic", "tent",
                   "pitches", "camping", "record store", "grass", "roland garros", "in the park", "knitwear",
                   "new quarter", "caught out by the clocks", "potato", "chit", "murmuration", "solstice", "festival",
                   "radiators", "draught", "log basket", "logs by", "wood burner", "5 degrees")
"""A piece of every text :data:`SEASONAL` can match, lower-cased: a text with none of them has no seasonal word,
found by substring tests instead of the regex (the renderer asks on every draw; a third of an XL suite's time)."""
_STEM_PATTERNS = tuple((stem, tuple(i for i, (pattern, _) in enumerate(SEASONAL) if stem in pattern.pattern.lower()))
                       for stem in _SEASONAL_STEMS)
"""Each stem with the :data:`SEASONAL` patterns whose words hold it: a text is searched only with the patterns of
the stems it holds (every pattern holds one, a test says; one search with all of them took ~0.2 ms a text)."""


_ALL_MONTHS = frozenset(range(1, 13))


@lru_cache(maxsize=1 << 16)
def season_months(text: str) -> frozenset[int]:
    """The months (1-12) every seasonal word of ``text`` (:data:`SEASONAL`) fits; all twelve for a text with none.
    Cached: the renderer asks of one text in many months (an XL suite asks ~20,000 times of ~8,600 texts)."""
    lowered = text.lower()
    suspects = {i for stem, patterns in _STEM_PATTERNS if stem in lowered for i in patterns}
    return _ALL_MONTHS.intersection(*(SEASONAL[i][1] for i in sorted(suspects) if SEASONAL[i][0].search(text)))


def in_season(text: str, month: int) -> bool:
    """Whether every seasonal word of ``text`` (:data:`SEASONAL`) fits ``month`` (1-12)."""
    return month in season_months(text)


_PRESENT = r"(?:\bI'm|\bI am|\bwe're|\bwe are|\bwhile I|'s|\bis|\bare|\bright now)\b"
_BEDTIME = r"\b(?:before bed|bedtime|wind(?:ing)? down|lights out)\b"
HOURLY: tuple[tuple[re.Pattern[str], int, int], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), first, last) for pattern, first, last in (
    # getting ready for bed, told as happening now ("I'm winding down with chamomile before bed"), not a habit
    # ("I watch the highlights twice before bed"): from late afternoon into the small hours
    (rf"{_PRESENT}[^.?!]*{_BEDTIME}|{_BEDTIME}[^.?!]*{_PRESENT}", 17, 2),
    # up before the rest of the house or the street
    (r"\bbefore (?:anyone|everyone|everybody)(?: else)?(?: [\w']+){0,4} (?:is|are|gets?) up\b", 3, 10),
    # a part of the day still to come, in the present tense ("Mum's teaching me this afternoon"): not once it is over
    (rf"{_PRESENT}[^.?!]*\b\w+ing\b[^.?!]*\bthis morning\b", 0, 11),
    (rf"{_PRESENT}[^.?!]*\b\w+ing\b[^.?!]*\bthis afternoon\b", 0, 17),
    # lunch still to come or under way (seed 2231: "It's a frozen lasagne this lunchtime" at 19:44, a flask "to
    # take out with me this lunchtime" at 22:01); "the florist wrapped tulips this lunchtime" is past and fits later
    (r"\b(?:it's|it is|I'm|I am|we're|we are)\b[^.?!]*\bthis lunchtime\b|"
     r"\bto (?:take|eat|have|grab|bring)\b[^.?!]*\bthis lunchtime\b", 0, 14),
    # a working day run late ("It's 8:30 and I'm still answering messages", written at 08:42 in seed 2231)
    (r"\bit's \d{1,2}(?::\d\d)? and I'm still\b", 19, 2),
    # the sky seen just now or tonight (the blind read of seed 1681: "the moon tonight" at 08:43, a rainbow at 23:00)
    (r"\b(?:noticed|saw|spotted|looked up)\b[^.?!]*\btonight\b|\bwhen I (?:closed|drew) the curtains\b|"
     r"\bthere(?:'s| is| are)\b[^.?!]*\b(?:moon|stars?)\b[^.?!]*\btonight\b", 18, 3),
    (r"\b(?:noticed|saw|spotted)\b[^.?!]*\bsunset\b|\bsky turning\b[^.?!]*\bred\b", 16, 23),
    (r"\b(?:noticed|saw|spotted|there's a|there is a)\b(?:(?!photo|puddle|picture)[^.?!])*"
     r"\brainbow(?! swirls| colou?rs)", 8, 19),
    (r"\bwhen I (?:opened|drew back) the curtains\b", 5, 12),
    (r"\bstill light (?:well )?(?:after|past) (?:nine|ten|9|10)\b", 20, 1),
    # seed 2747: "Got my second puncture of the morning" at 20:34
    (r"\bof the morning\b", 5, 12),
    # hours of it done already today (the blind read of seed 2731: "did six hours over the hills today" at 07:24)
    (r"\b(?:four|five|six|seven|eight) hours\b[^.?!]*\btoday\b|\bjust back from (?:four|five|six|seven|eight) hours\b",
     12, 23),
))
"""Words that tie a user text to hours of the day (first, last; last < first wraps past midnight); a v3 turn is
written only at an hour they fit (the blind read of seed 1631: "winding down before bed" at 08:13)."""
_ANY_HOURLY = re.compile(r"before bed|bedtime|wind(?:ing)? down|lights out|is up|are up|gets? up|this morning|"
                         r"this afternoon|this lunchtime|and I'm still|tonight|curtains|sunset|sky turning|rainbow|"
                         r"still light|hours|of the morning|"
                         r"\d(?::\d\d)? ?[ap]m\b|\d:\d\d", re.IGNORECASE)
_ANY_HOURLY_ASCII = re.compile(_ANY_HOURLY.pattern.lower())
""":data:`_ANY_HOURLY` for an ASCII text lower-cased: the same answer ~4x faster than ignoring case."""
_CLOCK_NOW = re.compile(r"\b(?:it's|it is|clock (?:says|reads|shows)|I'm \w+ing at) (gone |past |nearly |almost )?"
                        r"(\d{1,2})(?:(?::\d\d)? ?([ap])m\b|:\d\d\b)", re.IGNORECASE)
"""The time told as now ("It's 1:30am", "it's gone 1am", "It's 10:00", "the kitchen clock says 2am", "I'm knitting
at 2am"): the turn's hour must be that hour (gone: up to two after; nearly: the hour before)."""


def _within(hour: int, first: int, last: int) -> bool:
    return first <= hour <= last if first <= last else (hour >= first or hour <= last)


_ALL_HOURS = frozenset(range(24))


@lru_cache(maxsize=1 << 16)
def text_hours(text: str) -> frozenset[int]:
    """The hours (0-23) every hour-bound phrase of ``text`` (:data:`HOURLY`, a clock time told as now) fits; all
    24 for a text with none. Cached like :func:`season_months`."""
    if not (_ANY_HOURLY_ASCII.search(text.lower()) if text.isascii() else _ANY_HOURLY.search(text)):
        return _ALL_HOURS
    spans = []
    for m in _CLOCK_NOW.finditer(text):
        half = (m.group(3) or "").lower()
        told = int(m.group(2)) % 12 + (12 if half == "p" else 0) if half else int(m.group(2)) % 24
        lead = (m.group(1) or "").strip().lower()
        spans.append(((told - 1) % 24, told) if lead in ("nearly", "almost") else (
            told, (told + (2 if lead in ("gone", "past") else 0)) % 24))
    spans += [(first, last) for pattern, first, last in HOURLY if pattern.search(text)]
    return frozenset(h for h in _ALL_HOURS if all(_within(h, first, last) for first, last in spans))


def at_hour(text: str, hour: int) -> bool:
    """Whether every hour-bound phrase of ``text`` (:data:`HOURLY`, a clock time told as now) fits ``hour``
    (0-23)."""
    return hour in text_hours(text)


SLOT_SPAN = 40
"""Most characters a filled slot takes in :func:`template_pattern` (catalog-v3's longest fill is 22: "pair of
lifting straps"), so a slot never reaches across a merged memory item from one sentence into another."""


def template_pattern(template: str) -> tuple[str, re.Pattern[str]]:
    """The longest literal run of ``template`` (lower-cased: a cheap ``in`` filter before the regex) and a regex
    matching the template's text with its slots as wildcards (the audit's template lookup and the ``gloss``
    answerer find catalog pieces in a suite's turns with it)."""
    pieces, out = [], []
    for literal, slot, _, _ in string.Formatter().parse(template):
        pieces.append(literal)
        out.append(re.escape(literal))
        if slot is not None:
            out.append(".{1,%d}?" % SLOT_SPAN)
    return max(pieces, key=len).lower(), re.compile("".join(out), re.IGNORECASE)


_GENDERED_OCCASION = re.compile(r"\b([A-Z][a-z]+)'s (hen|stag|bachelorette|bachelor) (?:do|party|night|weekend)\b")
_OCCASION_GENDER = {"hen": "f", "bachelorette": "f", "stag": "m", "bachelor": "m"}


def occasion_gender_clash(text: str, genders: dict[str, str]) -> bool:
    """True when ``text`` gives a person of known gender (``genders``: first name, any case, -> ``f`` / ``m``) an
    occasion only the other gender has ("Mandla's hen weekend" for a man, "Ana's stag do" for a woman)."""
    for m in _GENDERED_OCCASION.finditer(text):
        gender = genders.get(m.group(1)) or genders.get(m.group(1).lower())
        if gender and gender != _OCCASION_GENDER[m.group(2)]:
            return True
    return False


STOP_WORDS: frozenset[str] = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves
    least lot lots many much one ones get gets got usually often really""".split()
)


_WORD = re.compile(r"[a-z']+")


@lru_cache(maxsize=1 << 16)
def _content_word(token: str) -> str:
    """``token`` (a lower-cased :data:`_WORD`) as a content word, apostrophes off; "" for a stop word or a short
    one (remembered: a few thousand words make up every text)."""
    w = token.strip("'")
    if w.endswith("'s"):
        w = w[:-2]
    return w if len(w) > 2 and w not in STOP_WORDS else ""


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` that are not stop words or slot names (apostrophe forms are split off)."""
    words = set(map(_content_word, _WORD.findall(text.lower())))
    words.discard("")
    return words


_SUFFIXES = ("ings", "ing", "ies", "ied", "ers", "er", "es", "ed", "s")


@lru_cache(maxsize=1 << 15)
def stem(word: str) -> str:
    """A crude suffix strip, so that 'hiking' and 'hikes' meet (the validity rules and the audit share it)."""
    for suf in _SUFFIXES:
        if len(word) > len(suf) + 3 and word.endswith(suf):
            return word[: -len(suf)]
    return word


@lru_cache(maxsize=1 << 16)
def stemmed_words(text: str) -> frozenset[str]:
    """Stemmed content words of ``text`` (cached: the question maker asks about the same option texts often)."""
    return frozenset(stem(w) for w in content_words(text))


def slot_names(template: str) -> set[str]:
    """Names of the ``{slots}`` a template uses."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def slot_specs(template: str) -> set[tuple[str, str]]:
    """``(slot, format spec)`` of every ``{slot:spec}`` a template uses (``{price:small}``)."""
    return {(name, spec) for _, name, spec, _ in string.Formatter().parse(template) if name and spec}


EVENT_SLOTS = re.compile(r"\{(?:price|clock|month|past_month|later_month|number|weekday|friend2?)\b")
"""Slots that make an act's context one occasion with its own values, told once per persona (v3): the wake "on
{weekday}" is not on Monday one week and on Tuesday the next, the snorkel masks are bought for one {friend}."""
ONE_OFF = re.compile(EVENT_SLOTS.pattern + r"|\b(?:my|our) (?:very )?first\b|\bfor the first time\b|\bfirst[- ]ever\b",
                     re.IGNORECASE)
"""An act's context that is one occasion, told once per persona (v3): one with :data:`EVENT_SLOTS`, or one that
claims a first ("Got my first one-star review", told three times in seed 2231's blind read)."""


@lru_cache(maxsize=1 << 14)
def tells_one_off(context: str) -> bool:
    """Whether ``context`` says a :data:`ONE_OFF` (remembered: the renderer asks ~40,000 times of ~1,000)."""
    return bool(ONE_OFF.search(context))

LONG_HELD = re.compile(
    r"\b(?:\w+-year-old|(?:I've|I have|we've|we have) (?:had|watched|used|followed|owned|kept|worn|done|played|known)"
    r"\b[^.?!]{0,40}\bfor (?:years|ages|decades)|(?:went|been going) to for (?:years|ages)"
    r"|(?:I've|I have|we've|we have) been [^.?!]{0,30}\bsince (?:school|childhood|uni|university|college|I was)"
    r"|(?:known|friends) since (?:school|childhood|uni|university|college|I was)|as long as I can remember"
    r"|my whole life|I've been \w+ing all year)"
    r"|\{(?:dog|cat)\} is (?:seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen)\b",
    re.IGNORECASE,
)
"""An act's context that tells a state held for years ("my eight-year-old phone", "a laptop I've had for years",
"friends since school"): a persona who came to the state by a drift in the suite's span does not say it (v3; the
blind read of seed 2627: an early adopter who traded in last year's phone, then a keeper of an eight-year-old one;
of seed 2697: a dog that came with a drift, then "Domino is twelve" and "the kibble I've been buying all year")."""

NAMES_THE_USER = re.compile(
    r"\b(?:since|now that) you(?:['’]ve| have)? (?:switched to|taken up|moved (?:on|over) to|given up|become|got "
    r"into|gotten into)\b"
    r"|\byou(?:['’]ve| have) (?:become|switched to|taken up|given up|got into|gotten into)\b"
    r"|\byou(?:['’]re| are) (?:now|clearly|really|obviously) (?:into|a (?:big |real |huge |true )?fan of)\b"
    r"|\byou(?:['’]re| are) (?:a (?:big|real|huge|true) fan of|such an? (?:\w+ )?(?:fan|lover|enthusiast))\b"
    r"|\bsounds like you(?:['’]re| are)? (?:really |now )?(?:love|enjoy|prefer|into|a fan|hooked)\b"
    r"|\byour new (?:\w+ )?(?:habit|hobby|passion|interest|diet|lifestyle|obsession)\b",
    re.IGNORECASE,
)
"""How an assistant's reply sums up the user's tastes or a change in them ("since you've taken up climbing",
"sounds like you're into tea now"): a system observes the replies too, so such a reply gives away what the cue
only shows (a habit of LLM-written dialogue; none of the 7,202 replies the packaged catalogs hold says it)."""
