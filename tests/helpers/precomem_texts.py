"""Test sentences written for these tests (never taken from dimobench's catalog)."""

PARTY = "I throw loud parties at my place every weekend"
PARAPHRASES = [
    "Every weekend I throw a loud party at my place",
    "Another loud party at my place this weekend, like every weekend",
    "My place hosts loud parties every weekend",
    "I threw a loud party at my place again this weekend",
    "Loud parties at my place every weekend, as usual",
]
CONTRADICTION = "I can't stand loud parties anymore and avoid them"
UNRELATED = [
    "I need to renew my passport before the trip",
    "The printer at the office jammed twice today",
    "I am learning to bake sourdough bread",
    "My laptop battery drains very quickly",
    "I repainted the bathroom cabinet blue",
    "The train to the city was delayed by an hour",
    "I planted tomatoes on the balcony",
    "I switched my phone plan to a cheaper one",
    "The dentist appointment got moved to Thursday morning",
    "I sorted old photos into albums",
]
