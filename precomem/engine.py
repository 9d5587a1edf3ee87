"""The PreCoMem engine: retrieve, gate by reliability-adjusted surprisal, update, and run the lifecycle."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from precomem import operators as ops
from precomem import topics
from precomem.agents import Candidate, Proposition, SubAgents, floor_support
from precomem.beliefs import BeliefStore
from precomem.config import PreCoMemConfig
from precomem.encoders import Encoder, calibrated, make_encoder, tokenize
from precomem.episodic import EpisodicCache
from precomem.llm_agents import make_agents
from precomem.nli import Verifier, gated_contradiction, make_verifier
from precomem.onnx import runtimes
from precomem.records import RecallItem, Regime, Update
from precomem.retrieval import hybrid_scores, read_confidence, recall_items, top_k
from precomem.surprisal import gate, raw_surprisal, reliability, score_weights

_PAST_QUERY = re.compile(
    r"\b(before|earlier|previously|formerly|originally|used to|at first|back then|in the past|prior to)\b",
    re.IGNORECASE,
)
"""Words that make a query ask about an earlier time."""


class PreCoMem:
    """Confidence-weighted belief memory with MAINTAIN / PROFILE / CORRECT updates.

    Example:
        >>> mem = PreCoMem(PreCoMemConfig(encoder="hashing"))
        >>> mem.observe("I throw loud parties every weekend", turn=1).regime
        <Regime.PROFILE: 'PROFILE'>
    """

    def __init__(
        self,
        config: PreCoMemConfig | None = None,
        agents: SubAgents | None = None,
        encoder: Encoder | None = None,
    ) -> None:
        """Build an empty engine; models (and the LLM behind ``config.agents``) load lazily on first use."""
        self.config = config or PreCoMemConfig()
        self.agents: SubAgents = agents or make_agents(self.config.agents)
        self.encoder: Encoder = encoder or make_encoder(self.config)
        self.store = BeliefStore(self.encoder.dim, self.config.bm25_k1, self.config.bm25_b)
        self.store.background = self.config.background_rate
        self.episodes = EpisodicCache()
        self.turn = 0
        self.rng = np.random.default_rng(self.config.seed)
        self.counts: dict[str, int] = {"MAINTAIN": 0, "PROFILE": 0, "CORRECT": 0}
        self._recalls = 0
        self._deprecated_slots = 0.0
        self._verifier: Verifier | None = None
        self._conf_cache: tuple[int, int, np.ndarray] | None = None  # (turn, rows, confidences) for recall

    @property
    def verifier(self) -> Verifier:
        """The contradiction verifier (resolved on first use)."""
        if self._verifier is None:
            self._verifier = make_verifier(self.config, self.encoder)
        return self._verifier

    # ------------------------------------------------------------------ write path
    def observe(self, text: str, turn: int | None = None, timestamp: str | None = None) -> Update:
        """Take one user observation into memory and return what happened.

        Args:
            text: The user's utterance (or any observation text).
            turn: Its turn number; defaults to one after the last observed turn.
            timestamp: Optional ISO 8601 time, kept in the episodic cache.
        """
        cfg, store = self.config, self.store
        self._conf_cache = None
        t = self.turn + 1 if turn is None else int(turn)
        self.turn = max(self.turn, t)
        self.episodes.add(t, text, timestamp)
        pruned = ops.prune(store, t, cfg)
        props = self.agents.extract(text, cfg.max_propositions, cfg.split_min_words)
        if not props:
            return Update(t, Regime.MAINTAIN, 0.0, 1.0, pruned=pruned)
        emb = self.encoder.encode([p.text for p in props])
        q = emb.mean(axis=0)
        q /= max(float(np.linalg.norm(q)), 1e-9)
        conf = store.effective(t, cfg.gamma)
        scores = hybrid_scores(store, q, tokenize(text), self._topic_p(q), conf, cfg)
        rows = top_k(scores, cfg.top_k)

        weights = score_weights(scores[rows], cfg.reliability_temperature)
        rho = 1.0 if cfg.no_reliability else reliability(weights, cfg.top_k)
        deviation = 1.0
        if len(rows):
            evidence = weights @ store.emb[rows]
            evidence /= max(float(np.linalg.norm(evidence)), 1e-9)
            deviation = 1.0 - float(calibrated(float(q @ evidence), self.encoder))
        cands = self._candidates(props, emb, rows, conf)
        contra = max((c.contradiction for cs in cands for c in cs), default=0.0)
        eff = rho * raw_surprisal(deviation, contra, cfg)
        regime = gate(eff, cfg, self.rng)
        if not len(rows) and not cfg.random_routing:
            regime = "MAINTAIN" if cfg.no_profile else "PROFILE"  # empty store: first cues are provisional
        upd = Update(
            t,
            Regime(regime),
            float(eff),
            float(rho),
            float(deviation),
            float(contra),
            [p.text for p in props],
            pruned=pruned,
        )
        topic_ids = topics.assign(emb, self.encoder)
        for j, prop in enumerate(props):
            self._apply(regime, prop, emb[j], int(topic_ids[j]), cands[j], t, upd)
        upd.pruned += ops.prune(store, t, cfg)
        self.counts[regime] += 1
        return upd

    def _topic_p(self, q: np.ndarray) -> np.ndarray:
        return topics.distribution(q, self.encoder, self.config.topic_temperature)

    def _candidates(
        self, props: list[Proposition], emb: np.ndarray, rows: np.ndarray, conf: np.ndarray
    ) -> list[list[Candidate]]:
        """Score every (proposition, retrieved belief) pair for similarity and contradiction in one batch."""
        if not len(rows):
            return [[] for _ in props]
        store = self.store
        cos = emb @ store.emb[rows].T
        sim = calibrated(cos, self.encoder)
        # The verifier sees each proposition's nli_max_pairs most similar beliefs (a cross-encoder row each).
        order = np.argsort(-cos, axis=1, kind="stable")[:, : self.config.nli_max_pairs or len(rows)]
        pi = np.repeat(np.arange(len(props)), order.shape[1])
        bi = order.reshape(-1)
        prem = [store.meta[rows[b]].text for b in bi]
        hyp = [props[p].text for p in pi]
        con = np.zeros((len(props), len(rows)), dtype=np.float32)
        con[pi, bi] = gated_contradiction(self.verifier, prem, hyp, store.emb[rows[bi]], emb[pi], self.encoder)
        out = []
        for p in range(len(props)):
            out.append(
                [
                    Candidate(
                        store.meta[r].id,
                        store.meta[r].text,
                        "fact" if store.fact[r] else "hypothesis",
                        store.meta[r].about,
                        float(conf[r]),
                        float(sim[p, i]),
                        float(con[p, i]),
                    )
                    for i, r in enumerate(rows.tolist())
                ]
            )
        return out

    def _apply(
        self,
        regime: str,
        prop: Proposition,
        emb: np.ndarray,
        topic: int,
        cands: list[Candidate],
        t: int,
        upd: Update,
    ) -> None:
        """Run one regime's operator for one proposition (targets and strengths come from the sub-agents)."""
        cfg, store = self.config, self.store
        support = self.agents.targets(
            "MAINTAIN", prop, cands, cfg.support_similarity, cfg.contradiction_min, related=cfg.related_similarity
        )
        by_id = {c.id: c for c in cands}
        rivals: list[str] = []
        if support and cfg.competition_margin is not None:
            # Within-topic competition: the observation supports the beliefs it matches best; same-topic
            # beliefs well behind the best match are taken as another state of the topic.
            best = max(by_id[s.id].similarity for s in support)
            rivals = [s.id for s in support if by_id[s.id].similarity < best - cfg.competition_margin]
            winner = max(support, key=lambda s: by_id[s.id].similarity).id
            support = [s for s in support if s.id not in rivals]
        if cfg.partial_support_similarity is not None:  # after competing: loose beliefs still lose rounds
            support = floor_support(support, by_id, cfg.partial_support_similarity, cfg.support_similarity)
        strong = [s for s in support if by_id[s.id].similarity >= cfg.support_similarity]
        dup = [s.id for s in support if by_id[s.id].similarity >= cfg.duplicate_similarity]
        # Rivals are neither supported nor charged here: an old state's hypotheses must stay available as
        # evidence of what held before; facts pay for losing the competition, hypotheses only rank lower for
        # questions about the present (see _compete).
        touched: set[str] = set(rivals)
        if regime == "CORRECT":
            fixes = self.agents.targets("CORRECT", prop, cands, cfg.support_similarity, cfg.contradiction_min)
            if fixes:
                for tg in fixes:
                    row = store.row_of[tg.id]
                    ops.soft_decay(store, row, float(np.clip(tg.strength, 0.0, 1.0)), t, cfg)
                    store.meta[row].history.append({"turn": t, "event": "decayed", "severity": round(tg.strength, 4)})
                    upd.decayed.append(tg.id)
                    touched.add(tg.id)
                if dup:  # the new state was already a hypothesis: commit it instead of writing a copy
                    self._commit(dup[0], prop, t, upd)
                    touched.add(dup[0])
                else:
                    self._write(prop, emb, topic, t, "CORRECT", upd, as_fact=True)
                self._charge(prop, cands, touched, t)
                return
            regime = "MAINTAIN" if cfg.no_profile else "PROFILE"  # nothing of the user's to correct
        if regime == "PROFILE" and not (strong if cfg.profile_reinforces_support else dup):
            # A new hypothesis; beliefs it partly supports get a half step (profile_reinforces_support: a
            # strongly supported belief is reinforced below instead, no copy is written).
            self._write(prop, emb, topic, t, "PROFILE", upd, as_fact=False)
            touched |= self._reinforce([(s.id, 0.5 * s.strength) for s in support], t, upd)[1]
            self._charge(prop, cands, touched, t)
            return
        if not strong:
            # Novel to the store (no belief it paraphrases): written whatever the gate said, so a new topic or
            # a new state of a known topic can enter; the related beliefs it partly supports still gain.
            self._write(prop, emb, topic, t, regime, upd, as_fact=cfg.no_profile and prop.about == "user")
        promoted, done = self._reinforce([(s.id, s.strength) for s in support], t, upd)
        touched |= done
        if promoted and not cfg.no_correct:
            # A hypothesis just became a fact: what it contradicts is corrected now, even if no single cue
            # was surprising enough (gradual drift reaches CORRECT through accumulated support).
            fixes = self.agents.targets("CORRECT", prop, cands, cfg.support_similarity, cfg.contradiction_min)
            for tg in fixes:
                row = store.row_of[tg.id]
                if store.fact[row] and tg.id not in upd.promoted:
                    ops.soft_decay(store, row, float(np.clip(tg.strength, 0.0, 1.0)), t, cfg)
                    store.meta[row].history.append(
                        {"turn": t, "event": "decayed", "severity": round(tg.strength, 4), "by": "promotion"}
                    )
                    upd.decayed.append(tg.id)
                    touched.add(tg.id)
        self._charge(prop, cands, touched, t)
        if rivals:
            self._compete(winner, rivals, t, upd)

    def _compete(self, winner: str, rivals: list[str], t: int, upd: Update) -> None:
        """Partial contradiction: a belief outcompeted by one it is not itself related to (another state of the
        topic) has lost a round. A fact loses a fraction ``competition_decay`` of its confidence, so gradual
        drift that never triggers CORRECT still wears the old fact down; a hypothesis keeps its confidence (it
        is what a question about the past needs) and counts the loss in ``rivalled``, which ranks it lower for
        questions about the present (``rival_discount``). Beliefs of the winner's own state are untouched."""
        cfg, store = self.config, self.store
        if winner not in store.row_of:
            return
        w = store.emb[store.row_of[winner]]
        for bid in rivals:
            row = store.row_of[bid]
            if not store.alive[row]:
                continue
            if float(calibrated(float(store.emb[row] @ w), self.encoder)) >= cfg.related_similarity:
                continue
            if not store.fact[row]:
                store.rivalled[row] += 1.0
                continue
            if cfg.competition_decay <= 0.0:
                continue
            ops.soft_decay(store, row, cfg.competition_decay, t, cfg)
            store.meta[row].history.append(
                {"turn": t, "event": "decayed", "severity": cfg.competition_decay, "by": "competition"}
            )
            upd.decayed.append(bid)

    def _charge(self, prop: Proposition, cands: list[Candidate], touched: set[str], t: int) -> None:
        """Topic-scoped lifecycle: retrieved beliefs about the same subject that this observation relates to
        (calibrated similarity >= ``related_similarity``) but did not support lose a full decay step."""
        cfg, store = self.config, self.store
        for c in cands:
            if c.id in touched or c.about != prop.about or c.similarity < cfg.related_similarity:
                continue
            row = store.row_of.get(c.id)
            if row is not None and store.alive[row]:
                ops.charge(store, row, t)

    def _commit(self, bid: str, prop: Proposition, t: int, upd: Update) -> None:
        """Make an existing belief the corrected fact: at least the fact band's confidence, clock reset."""
        store, row = self.store, self.store.row_of[bid]
        conf = max(float(store.conf[row]), ops.band_confidence("fact", prop.confidence, self.config))
        store.conf[row], store.last[row], store.extra[row] = conf, t, 0.0
        store.fact[row], store.deprecated[row], store.rivalled[row] = True, False, 0.0
        meta = store.meta[row]
        if meta.source_turns[-1] != t:
            meta.source_turns.append(t)
        meta.history.append({"turn": t, "event": "committed", "regime": "CORRECT", "confidence": round(conf, 4)})
        upd.reinforced.append(bid)
        upd.promoted.append(bid)

    def _write(
        self,
        prop: Proposition,
        emb: np.ndarray,
        topic: int,
        t: int,
        regime: str,
        upd: Update,
        *,
        as_fact: bool,
    ) -> None:
        bid = ops.write(self.store, prop, emb, tokenize(prop.text), topic, t, as_fact=as_fact, regime=regime,
                        cfg=self.config)
        upd.created.append(bid)

    def _reinforce(self, targets: list[tuple[str, float]], t: int, upd: Update) -> tuple[bool, set[str]]:
        """Reinforce targets; (whether one was promoted to a fact, the ids reinforced)."""
        cfg, store = self.config, self.store
        if cfg.no_maintain:
            return False, set()
        promoted = False
        done: set[str] = set()
        for bid, strength in targets:
            if strength <= 0.0:
                continue
            done.add(bid)
            row = store.row_of[bid]
            w = ops.reinforce(store, row, strength, t, cfg.eta)
            meta = store.meta[row]
            if strength >= 0.5 and (not meta.source_turns or meta.source_turns[-1] != t):
                # Provenance lists the turns that were evidence for the belief, not every related mention.
                meta.source_turns.append(t)
            meta.history.append({"turn": t, "event": "supported", "confidence": round(w, 4)})
            upd.reinforced.append(bid)
            if ops.promote(store, row, cfg):
                meta.history.append({"turn": t, "event": "promoted", "confidence": round(w, 4)})
                upd.promoted.append(bid)
                promoted = True
        return promoted, done

    # ------------------------------------------------------------------ read path
    def recall(self, query: str, k: int | None = None) -> list[RecallItem]:
        """Top-k beliefs for a query, best first (no side effects on the beliefs)."""
        q = self.encoder.encode([query])[0]
        return self.search(q, tokenize(query), k, past=bool(_PAST_QUERY.search(query)))

    def search(
        self, q_emb: np.ndarray, q_tokens: list[str], k: int | None = None, *, past: bool = False
    ) -> list[RecallItem]:
        """Rank by an already-encoded query (what recall() does after encoding; used by benchmarks).

        ``past``: the query asks about an earlier time (see ``past_query_confidence``)."""
        k = self.config.top_k if k is None else k
        store = self.store
        cache = self._conf_cache
        if cache is None or cache[0] != self.turn or cache[1] != store.n:
            # Recall never changes beliefs, so between observations the confidences can be reused.
            cache = self._conf_cache = (self.turn, store.n, store.effective(self.turn, self.config.gamma))
        conf = read_confidence(store, cache[2], self.config, past, self.turn)
        scores = hybrid_scores(store, q_emb, q_tokens, self._topic_p(q_emb), conf, self.config)
        if not past and self.config.deprecated_recall == "past":
            scores[store.deprecated[: store.n]] = -np.inf  # what the user changed stays out of the present
        items = recall_items(store, top_k(scores, k), conf, scores)
        if k > 0:
            self._recalls += 1
            self._deprecated_slots += sum(it.deprecated for it in items) / k
        return items

    # ------------------------------------------------------------------ inspection
    def encoders(self) -> dict[str, str]:
        """Which embedding, NLI verifier and sub-agents run, and the runtime (torch, ONNX) of each model."""
        nli = self.verifier.name
        return {
            "embedding": self.encoder.name,
            "nli": nli if nli in ("rule", "cross-encoder") else f"{nli}+rule",  # the rule runs beside the head only
            "agents": self.agents.name,
            **runtimes(self.encoder, self.verifier),
        }

    def snapshot(self) -> list[dict[str, Any]]:
        """Live beliefs as plain dicts (JSON-serialisable), oldest first."""
        from precomem.state import snapshot

        return snapshot(self)

    def stats(self) -> dict[str, Any]:
        """Memory metrics as plain JSON types (see :func:`precomem.state.stats`)."""
        from precomem.state import stats

        return stats(self)

    def state(self) -> dict[str, Any]:
        """Everything needed to continue identically, as plain JSON types."""
        from precomem.state import dump_state

        return dump_state(self)

    @classmethod
    def from_snapshot(
        cls,
        state: dict[str, Any] | list[dict[str, Any]],
        config: PreCoMemConfig | None = None,
        agents: SubAgents | None = None,
    ) -> PreCoMem:
        """Rebuild an engine from :meth:`state` (exact) or from a :meth:`snapshot` list (re-encodes texts)."""
        from precomem.state import load

        return load(cls, state, config, agents)
