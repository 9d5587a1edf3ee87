"""Rule sub-agents: extraction keeps the user's words; classes separate the user from others and the past."""

from __future__ import annotations

import pytest

from precomem import RuleAgents
from precomem.agents import classify


@pytest.mark.parametrize(
    ("text", "cls", "about"),
    [
        ("I throw loud parties every weekend", "statement", "user"),
        ("Rewrite this email to my landlord", "request", "user"),
        ("What should I cook tonight?", "request", "user"),
        ("My sister hates crowds", "other", "other"),
        ("Jake throws loud parties every weekend", "other", "other"),
        ("My sister and I went to a concert", "event", "user"),
        ("I went to a LGBTQ support group yesterday and it was so powerful.", "event", "user"),
        ("Last night I joined a fantasy literature forum", "event", "user"),
        ("I went to a gig almost every weekend", "statement", "user"),
        ("I usually read before bed", "statement", "user"),
        ("Hey Jon! I just launched an ad campaign for my clothing store.", "event", "user"),
        ("Back in college I used to party every night", "past", "past"),
        ("I moved to Berlin last week", "event", "user"),
        ("Loud parties every weekend at my place", "statement", "user"),
    ],
)
def test_classify(text: str, cls: str, about: str) -> None:
    assert classify(text) == (cls, about, cls == "event")  # explicit events, and only they, are protected


def test_short_text_kept_whole_long_text_split_into_sentences() -> None:
    agents = RuleAgents()
    short = agents.extract("I love jazz. It relaxes me.", 6, 25)
    assert [p.text for p in short] == ["I love jazz. It relaxes me."]
    long = (
        "I spent the whole weekend at home reading a novel. My brother came by on Sunday and we cooked. "
        "Thanks! Could you suggest another mystery novel for next weekend, something not too long?"
    )
    props = agents.extract(long, 6, 25)
    assert [p.text for p in props][0] == "I spent the whole weekend at home reading a novel."
    assert "Thanks!" not in [p.text for p in props]
    assert props[-1].cls == "request"
    assert agents.extract("   ", 6, 25) == []
