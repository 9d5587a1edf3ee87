"""The audit's attacks and shortcut baselines find leaks that are planted, and only read what a system could."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dimobench.api import GenerateConfig, audit_suite, generate_suite, load_suite, reference_seeds
from dimobench.audit.card import summary
from dimobench.audit.items import Item, cluster_interval, credit, items_of, relabel_null
from dimobench.audit.shortcuts import Dialogue, bow_window, past_inverse, recent_mention
from dimobench.catalog import find_catalog
from dimobench.suite.load import Suite
from dimobench.suite.schema import Manifest, QAItem, Turn
from tests.helpers.cli import run_cli


@pytest.fixture(scope="module")
def two_seeds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("audit")
    for seed in (1, 2):
        generate_suite(GenerateConfig(turns=160, personas=3, seed=seed), root / f"s{seed}")
    return root / "s1", root / "s2"


def _rewrite_gold(src: Path, dst: Path, change) -> Path:
    """Copy a suite and rewrite each item's gold option text with ``change(text) -> text``."""
    shutil.copytree(src, dst)
    rows = [json.loads(line) for line in (dst / "qa.jsonl").read_text(encoding="utf-8").splitlines()]
    for r in rows:
        r["options"][r["answer_index"]] = change(r["options"][r["answer_index"]])
        r["answer"] = r["options"][r["answer_index"]]
    (dst / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return dst


def _accuracy(report, name: str) -> float:
    return next(s.accuracy for s in report.attacks + report.shortcuts if s.name == name)


def test_a_planted_length_leak_lifts_the_length_attack_past_its_gate(two_seeds, tmp_path):
    clean = audit_suite(two_seeds[0])
    leaky = audit_suite(_rewrite_gold(two_seeds[0], tmp_path / "leaky",
                                      lambda t: t + ", followed by a long and winding afternoon of it"))
    assert _accuracy(clean, "length") < 0.45
    assert _accuracy(leaky, "length") > 0.95
    gate = next(g for g in leaky.gates if g.name == "no_context")
    assert not gate.passed and not leaky.passed


def test_a_question_that_means_its_gold_lifts_the_meaning_attack_past_its_gate(two_seeds, tmp_path):
    # the no-memory system answers by the question's closeness in meaning to each option; the card must see that
    dst = tmp_path / "hinted"
    shutil.copytree(two_seeds[0], dst)
    rows = [json.loads(line) for line in (dst / "qa.jsonl").read_text(encoding="utf-8").splitlines()]
    for r in rows:
        r["question"] = f"{r['question']} Think of {r['answer'][0].lower()}{r['answer'][1:]}."
    (dst / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    clean, hinted = audit_suite(two_seeds[0]), audit_suite(dst)
    assert _accuracy(clean, "question_meaning") < 0.45
    assert _accuracy(hinted, "question_meaning") > 0.9
    meaning = next(a for a in hinted.attacks if a.name == "question_meaning")
    assert meaning.describe.endswith(("[minilm, onnx]", "[minilm, torch]", "[hashing]"))  # which embedding ran
    assert not next(g for g in hinted.gates if g.name == "no_context").passed


def test_a_word_every_gold_of_a_persona_shares_lifts_the_recurrence_attack(two_seeds, tmp_path):
    # an attacker who sees all of a persona's questions on a trait reads off what keeps being offered
    clean = audit_suite(two_seeds[0])
    leaky = audit_suite(_rewrite_gold(two_seeds[0], tmp_path / "recurring", lambda t: f"{t} (zephyrine)"))
    assert _accuracy(clean, "option_recurrence") < 0.45
    assert _accuracy(leaky, "option_recurrence") > 0.7  # a persona asked once on a trait has nothing to compare


def test_a_prior_learned_on_one_seed_answers_another_when_one_text_is_always_gold(two_seeds, tmp_path):
    train = _rewrite_gold(two_seeds[1], tmp_path / "train", lambda t: "The planted favourite")
    test = _rewrite_gold(two_seeds[0], tmp_path / "test", lambda t: "The planted favourite")
    report = audit_suite(test, train=[train])
    assert _accuracy(report, "option_prior") == 1.0
    assert report.strongest is not None and report.strongest.accuracy == 1.0
    assert report.train == ["train:train"]
    clean = audit_suite(two_seeds[0], train=[two_seeds[1]])
    assert _accuracy(clean, "option_prior") < 0.7


def test_a_tie_between_gold_and_one_wrong_option_counts_half():
    assert credit([1.0, 1.0, 0.0, 0.0], 0) == 0.5
    assert credit([1.0, 1.0, 0.0, 0.0], 2) == 0.0
    assert credit([0.0, 3.0, 1.0, 2.0], 1) == 1.0



def test_intervals_resample_whole_persona_trait_units():
    # ten units of ten items each, every unit all right or all wrong: as uncertain as ten coin flips
    credits = [float(u % 2) for u in range(10) for _ in range(10)]
    units = [("s", f"p{u}", "t") for u in range(10) for _ in range(10)]
    low, high = cluster_interval(credits, units)
    assert low < 0.5 < high and high - low > 0.45
    spread = cluster_interval(credits, [("s", f"p{i}", "t") for i in range(100)])
    assert spread is not None and spread[1] - spread[0] < 0.25


def _items(units: int, per_unit: int, held: str = "a") -> list:
    """``units`` persona x trait units of ``per_unit`` questions each, every one offering states a-d with
    ``held`` gold; the options' order turns with each question, so position tells nothing."""
    out = []
    for u in range(units):
        for q in range(per_unit):
            states = ["a", "b", "c", "d"][q % 4:] + ["a", "b", "c", "d"][: q % 4]
            qa = QAItem(qa_id=f"p{u}-q{q}", persona_id=f"p{u}", ask_turn=1, qa_type="current_state",
                        phase="stable", trait_id="t", drift_id=None, question="Which?", options=states,
                        answer_index=states.index(held), answer=held, stale_index=None, confounder_index=None,
                        evidence_turns=[1])
            out.append(Item("s", f"p{u}", qa, None))
    return out


def test_the_relabelling_null_has_the_spread_of_an_attack_that_knows_a_state():
    """An attack that always names state a: right on every question of a unit holding a, wrong on the others."""
    few = _items(units=4, per_unit=25)
    scores = [[1.0 if o == "a" else 0.0 for o in it.options] for it in few]
    states = [list(it.options) for it in few]
    null = relabel_null(scores, few, states, draws=400)
    assert sum(credit(sc, it.gold) for sc, it in zip(scores, few)) / len(few) == 1.0  # every unit holds a
    assert abs(sum(null) / len(null) - 0.25) < 0.04  # no leak: a's questions are a quarter of them
    assert set(null) <= {0.0, 0.25, 0.5, 0.75, 1.0}  # a unit is right or wrong as a whole
    assert sorted(null)[int(0.95 * 399)] >= 0.5  # four units: a lucky draw is common
    many = _items(units=100, per_unit=1)
    wide = relabel_null([[1.0 if o == "a" else 0.0 for o in it.options] for it in many], many,
                        [list(it.options) for it in many], draws=400)
    assert sorted(wide)[int(0.95 * 399)] < 0.34  # a hundred independent units: a tight null


def test_an_item_that_cannot_be_relabelled_counts_its_chance_in_the_null():
    """No state known (an import, a distractor): with no information the gold is any option, 1 in 4."""
    items = _items(units=3, per_unit=4)
    scores = [[1.0 if o == "a" else 0.0 for o in it.options] for it in items]
    assert relabel_null(scores, items, [[None] * 4 for _ in items], draws=50) == [0.25] * 50
    twice = [["a", "a", "c", "d"] for _ in items]  # one state offered twice cannot be relabelled either
    assert relabel_null(scores, items, twice, draws=50) == [0.25] * 50


def test_units_of_different_sizes_each_permute_their_own_states():
    """A unit offering three states is right as a whole 1 time in 3, one offering four 1 time in 4."""
    three = []
    for q in range(30):
        options = ["a", "b", "c"][q % 3:] + ["a", "b", "c"][: q % 3]
        three.append(Item("s", "p0", QAItem(
            qa_id=f"p0-q{q}", persona_id="p0", ask_turn=1, qa_type="current_state", phase="stable", trait_id="t",
            drift_id=None, question="Which?", options=options, answer_index=options.index("a"), answer="a",
            stale_index=None, confounder_index=None, evidence_turns=[1]), None))
    four = [Item("s", "p9", it.qa.model_copy(update={"persona_id": "p9"}), None) for it in _items(1, 30)]
    items = three + four
    scores = [[1.0 if o == "a" else 0.0 for o in it.options] for it in items]
    null = relabel_null(scores, items, [list(it.options) for it in items], draws=3000)
    assert set(null) == {0.0, 0.5, 1.0}
    share = {v: null.count(v) / len(null) for v in (0.0, 0.5, 1.0)}
    assert abs(share[1.0] - 1 / 12) < 0.02 and abs(share[0.0] - 2 / 3 * 3 / 4) < 0.03


def test_the_card_reports_each_attacks_null(two_seeds, tmp_path, monkeypatch):
    """catalog-v3 items offer four states each: every attack gets a null, and the strongest attack the null of
    the best of them; catalog v1 pads every item with a distractor, so no item can be relabelled."""
    assert all(s.null_p95 is None for s in audit_suite(two_seeds[0], train=[two_seeds[1]]).attacks)
    monkeypatch.setenv("DIMOBENCH_CATALOG", str(find_catalog("catalog-v3")))
    made = [generate_suite(GenerateConfig(turns=160, personas=3, seed=seed, qa_rules="valid"), tmp_path / f"v{seed}",
                           verify=False, audit=False) for seed in (1, 2)]
    report = audit_suite(tmp_path / "v1", train=[tmp_path / "v2"], out=tmp_path / "card")
    assert made and all(s.null_p95 is not None for s in report.attacks)
    prior = next(s for s in report.attacks if s.name == "option_prior")
    assert prior.null_p95 is not None and 0.25 < prior.null_p95 < 0.75  # three personas: few units, a wide null
    assert "| null p95 |" in (tmp_path / "card" / "audit.md").read_text(encoding="utf-8")
    best = report.strongest_null_p95
    assert best is not None and best >= max(s.null_p95 or 0.0 for s in report.attacks)
    assert summary(report)["strongest"]["null_p95"] == best  # type: ignore[index]


def _first_state_is_gold(src: Path, dst: Path) -> Path:
    """Copy a catalog-v3 suite with each item's gold moved to the option of its alphabetically first state."""
    from dimobench.audit.check import option_states
    from dimobench.suite.load import load_suite

    shutil.copytree(src, dst)
    suite = load_suite(dst)
    items = items_of([("s", suite)])
    first = {it.qa.qa_id: min(range(len(it.options)), key=lambda i, st=st: (st[i] is None, str(st[i])))
             for it, st in zip(items, option_states([("s", suite)], items), strict=True)}
    rows = [json.loads(line) for line in (dst / "qa.jsonl").read_text(encoding="utf-8").splitlines()]
    for r in rows:
        if r["qa_id"] in first:
            r["answer_index"] = first[r["qa_id"]]
            r["answer"] = r["options"][r["answer_index"]]
    (dst / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return dst


def test_a_state_prior_learned_on_one_seed_answers_another_when_one_state_is_always_gold(tmp_path, monkeypatch):
    """Option texts vary between seeds (catalog v3), so a text prior barely carries over; the trait states do."""
    monkeypatch.setenv("DIMOBENCH_CATALOG", str(find_catalog("catalog-v3")))
    generate_suite(GenerateConfig(turns=160, personas=3, seed=1, qa_rules="valid"), tmp_path / "v1", verify=False,
                   audit=False)
    # 24 training personas, so every trait the three test personas hold has been seen (checked below: with
    # twelve, a trait set redrawn for its occupation left one unseen)
    generate_suite(GenerateConfig(turns=100, personas=24, seed=2, qa_rules="valid"), tmp_path / "v2", verify=False,
                   audit=False)
    seen = {t.trait_id for p in load_suite(tmp_path / "v2").personas for t in p.traits}
    assert {t.trait_id for p in load_suite(tmp_path / "v1").personas for t in p.traits} <= seen
    leaky = audit_suite(_first_state_is_gold(tmp_path / "v1", tmp_path / "l1"),
                        train=[_first_state_is_gold(tmp_path / "v2", tmp_path / "l2")])
    assert _accuracy(leaky, "state_prior") == 1.0 > _accuracy(leaky, "option_prior")
    assert not leaky.passed
    clean = audit_suite(tmp_path / "v1", train=[tmp_path / "v2"])
    # three test personas are ~18 units: a leak-free suite of this shape scores up to ~0.42 95 times in 100 (the
    # relabelling null), so the clean bound is that noise, well below the planted leak's 1.0
    assert _accuracy(clean, "state_prior") < 0.5


def _turn(n: int, text: str) -> Turn:
    return Turn(persona_id="p01", turn=n, session=1, timestamp="2026-01-01T10:00:00", user=text, assistant="Ok.")


def test_shortcuts_read_only_the_turns_up_to_the_question():
    qa = QAItem(qa_id="p01-q1", persona_id="p01", ask_turn=2, qa_type="current_state", phase="stable",
                trait_id=None, drift_id=None, question="What does Ann do at weekends?",
                options=["Hiking in the hills", "Baking sourdough bread", "Playing chess", "Watching films"],
                answer_index=1, answer="Baking sourdough bread", stale_index=None, confounder_index=None,
                evidence_turns=[1])
    turns = [_turn(1, "My sourdough bread came out well."), _turn(2, "Nothing much today."),
             _turn(3, "Hiking hills, hiking hills, hiking in the hills all day!")]
    suite = Suite(Path("."), Manifest.model_construct(), [], [], turns, [qa])
    item = items_of([("s", suite)])[0]
    dialogue = Dialogue([("s", suite)])
    assert credit(bow_window(dialogue, item), item.gold) == 1.0
    assert credit(recent_mention(dialogue, item), item.gold) == 1.0


def test_the_past_shortcut_answers_by_elimination_from_what_the_user_left_behind():
    # A user who recalls three of the four options as their distant past leaves one: the shortcut finds it
    # without any cue of it, from the turns up to the question only.
    qa = QAItem(qa_id="p01-q1", persona_id="p01", ask_turn=4, qa_type="current_state", phase="stable",
                trait_id=None, drift_id=None, question="What does Ann do at weekends?",
                options=["Hiking in the hills", "Baking sourdough bread", "Playing chess at a club", "Watching films"],
                answer_index=1, answer="Baking sourdough bread", stale_index=None, confounder_index=None,
                evidence_turns=[])
    turns = [_turn(1, "Years ago, I went hiking in the hills every weekend."),
             _turn(2, "Back then I played chess at a club on Saturdays."),
             _turn(3, "A long time ago I watched films every weekend; it feels a world away."),
             _turn(4, "The kettle is broken again."),
             _turn(5, "Ages ago I baked sourdough bread.")]
    suite = Suite(Path("."), Manifest.model_construct(), [], [], turns, [qa])
    items = items_of([("s", suite)])
    assert credit(past_inverse([("s", suite)], items)[0], items[0].gold) == 1.0
    # asked before any of it was said, every option ties
    early = items_of([("s", Suite(Path("."), Manifest.model_construct(), [], [], turns,
                                  [qa.model_copy(update={"ask_turn": 0})]))])
    assert len(set(past_inverse([("s", suite)], early)[0])) == 1


def test_a_suite_whose_distant_pasts_name_every_wrong_option_fails_the_past_gate(two_seeds, tmp_path):
    # each kept question follows three turns in which the user recalls one of its wrong options as their past
    qa = [json.loads(line) for line in (two_seeds[0] / "qa.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = [json.loads(line) for line in (two_seeds[0] / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()]
    at = {(r["persona_id"], r["turn"]): r for r in rows}
    used: set[tuple[str, int]] = set()
    kept, planted = [], []
    for q in qa:
        slots = [(q["persona_id"], q["ask_turn"] - k) for k in range(3)]
        if any(s in used or s not in at for s in slots):
            continue
        used.update(slots)
        kept.append(q)
        wrong = [o for i, o in enumerate(q["options"]) if i != q["answer_index"]]
        planted += [(s, f"Years ago I spent my time on {o.lower()}, a long time ago now.")
                    for s, o in zip(slots, wrong, strict=True)]
    assert len(kept) >= 20

    def write(dst: Path, plant: bool) -> Path:
        shutil.copytree(two_seeds[0], dst)
        new = {**at}
        if plant:
            new.update({s: {**at[s], "user": text} for s, text in planted})
        (dst / "qa.jsonl").write_text("".join(json.dumps(q) + "\n" for q in kept), encoding="utf-8")
        (dst / "dialogues.jsonl").write_text("".join(json.dumps(new[(r["persona_id"], r["turn"])]) + "\n"
                                                     for r in rows), encoding="utf-8")
        return dst

    clean, leaky = audit_suite(write(tmp_path / "clean", False)), audit_suite(write(tmp_path / "pasts", True))
    assert _accuracy(clean, "past_inverse") < 0.35
    assert _accuracy(leaky, "past_inverse") > 0.7
    assert not next(g for g in leaky.gates if g.name == "past_inverse").passed


def test_replies_that_name_the_users_state_lift_the_reply_shortcuts_past_their_gate(two_seeds, tmp_path):
    # a system observes the assistant's replies too: an assistant that says "since you're into <gold>" gives the
    # answer away while the user's own turns stay implicit, and only the reply-reading shortcuts can see it
    dst = tmp_path / "echoing"
    shutil.copytree(two_seeds[0], dst)
    qa = [json.loads(line) for line in (dst / "qa.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = [json.loads(line) for line in (dst / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()]
    at = {(r["persona_id"], r["turn"]): r for r in rows}
    for q in qa:
        at[(q["persona_id"], q["ask_turn"])]["assistant"] += f" Since you're into {q['answer'].lower()}, enjoy it."
    (dst / "dialogues.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    clean, echoing = audit_suite(two_seeds[0]), audit_suite(dst)
    assert _accuracy(echoing, "recent_mention_replies") > 0.6
    assert _accuracy(echoing, "recent_mention_replies") > _accuracy(clean, "recent_mention_replies") + 0.2
    assert not next(g for g in echoing.gates if g.name == "recent_mention_replies").passed
    # the user-side shortcuts read the same user turns as before and cannot see it
    assert _accuracy(echoing, "bow_window") == _accuracy(clean, "bow_window")


def test_an_imported_suite_without_options_gets_a_card_where_the_option_attacks_do_not_apply(tmp_path):
    from dimobench.importers import import_benchmark

    src = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo10.json"
    if not src.is_file():
        pytest.skip("../shared/data/locomo10.json is not beside the checkout")
    import_benchmark("locomo", src, tmp_path / "locomo")
    report = audit_suite(tmp_path / "locomo", out=tmp_path / "card")
    assert report.items == 0 and report.strongest is None and report.flags is None
    assert all(g.passed for g in report.gates if g.name in ("no_context", "bow_window", "flagged_items"))
    # an import has no assistant replies (every importer writes ""), so the reply shortcuts are not run
    assert not [s for s in report.shortcuts if s.name.endswith(("_replies", "_replies_inverse"))]
    assert report.diversity["locomo"]["user_turns"] > 5000
    assert (tmp_path / "card" / "audit.md").read_text(encoding="utf-8").startswith("# Validity audit: locomo")


def test_the_cli_says_which_suites_it_audited_and_which_it_trained_on(two_seeds):
    # `--train A B` is --train A plus B audited: the card's first line must show it, not hide it
    r = run_cli("audit", str(two_seeds[0]), "--train", str(two_seeds[1]), str(two_seeds[0]))
    assert r.returncode in (0, 1), r.stderr
    first = r.stdout.splitlines()[0]
    assert first == f"audited: {two_seeds[0]}, {two_seeds[0]}; attacks trained on: {two_seeds[1]}"
    assert "repeat --train" in r.stdout
    lopo = run_cli("audit", str(two_seeds[0]), "--reference", "0")
    assert lopo.stdout.splitlines()[0].endswith("trained on: the other personas (leave-one-persona-out)")
    # with neither, a suite generated offline is attacked as generate's card attacked it: trained on other seeds
    alone = run_cli("audit", str(two_seeds[0]))
    assert alone.returncode in (0, 1), alone.stderr
    assert alone.stdout.splitlines()[0].endswith(", ".join(f"reference-seed-{s}" for s in reference_seeds(1)))


def test_a_failed_card_within_chance_for_its_size_says_so():
    from dimobench.suite.card import noise_note

    attack_failed = [{"name": "no_context", "passed": False}, {"name": "lint_findings", "passed": True}]
    lint_failed = [{"name": "no_context", "passed": True}, {"name": "lint_findings", "passed": False}]
    assert "within chance" in noise_note(0.348, 0.38, attack_failed)  # seed 1407's state prior: a wide null
    assert noise_note(0.41, 0.38, attack_failed) == ""  # above what chance gives: a leak, said plainly by the FAIL
    assert noise_note(0.28, 0.38, lint_failed) == ""  # failed on a lint: nothing to say about chance


def test_a_sentence_a_persona_says_a_third_time_counts_as_retold_and_leads_do_not():
    # Session 26: one XL persona asked "Are there apps that post cards for me?" eleven times, which no template
    # count shows; a lead ("Let me run something by you.") is meant to recur and is left out.
    from dimobench.audit.diversity import sentence_repeats

    lead = "Let me run something by you."
    texts = [f"{lead} Are there apps that post cards for me?"] * 3 + [
        f"{lead} My aunt's chat is full of reminders.", f"{lead} I sorted the spice rack again."]
    turns = [_turn(n, t) for n, t in enumerate(texts, start=1)]
    turns.append(Turn(persona_id="p02", turn=1, session=1, timestamp="2026-01-01T10:00:00",
                      user="Are there apps that post cards for me?", assistant="Ok."))
    suite = Suite(Path("."), Manifest.model_construct(), [], [], turns, [])
    got = sentence_repeats(suite, frozenset({lead.lower()}))
    # 6 counted sentences (the leads left out); only p01's third "Are there apps ..." is retold
    assert got == {"sentence_retold": round(1 / 6, 4), "sentence_most_told": 3}
    # with the lead counted, its third, fourth and fifth telling are retold too
    assert sentence_repeats(suite) == {"sentence_retold": round(4 / 11, 4), "sentence_most_told": 5}
    # a lead ending in ":" runs into the sentence after it unless it is taken off first
    colon = [_turn(n, "New topic: Are there apps that post cards for me?") for n in range(1, 4)]
    suite = Suite(Path("."), Manifest.model_construct(), [], [], colon, [])
    assert sentence_repeats(suite, frozenset({"new topic:"})) == {"sentence_retold": round(1 / 3, 4),
                                                                   "sentence_most_told": 3}


def test_a_reply_the_persona_was_already_given_counts_as_heard_again():
    # Session 29: in an XL suite 77% of cue turns had a reply their persona had already been given word for word
    from dimobench.audit.diversity import reply_heard_again

    turns = [Turn(persona_id=p, turn=n, session=1, timestamp="2026-01-01T10:00:00", user=f"Q{n}?", assistant=a)
             for n, (p, a) in enumerate([("p01", "Soak it."), ("p01", "Soak  it."), ("p02", "Soak it."),
                                         ("p01", "Dry it."), ("p01", "Soak it.")], start=1)]
    suite = Suite(Path("."), Manifest.model_construct(), [], [], turns, [])
    assert reply_heard_again(suite) == round(2 / 5, 4)  # p01's second and third "Soak it."; p02's is its first
    silent = [t.model_copy(update={"assistant": ""}) for t in turns]
    assert reply_heard_again(Suite(Path("."), Manifest.model_construct(), [], [], silent, [])) is None
