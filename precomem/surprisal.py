"""Reliability, effective surprisal and the two-threshold gate (all deterministic)."""

from __future__ import annotations

import math

import numpy as np

from precomem.agents import Regime
from precomem.config import PreCoMemConfig


def score_weights(scores: np.ndarray, temperature: float) -> np.ndarray:
    """Softmax of top-K scores relative to the best one: the weights of the evidence embedding and the
    entropy.

    Dividing by the best score makes concentration scale-free: encoders and stores whose scores sit at
    different absolute levels read the same when the best item stands out by the same ratio.
    """
    if len(scores) == 0:
        return scores
    best = float(scores.max())
    rel = scores / best if best > 0 else np.ones_like(scores)
    z = np.exp((rel - 1.0) / temperature)
    return z / z.sum()


def reliability(weights: np.ndarray, k: int) -> float:
    """rho = 1 - H(weights) / ln K: 1 for one dominant item, 0 for perfectly flat top-K scores.

    Normalising by the configured K (not by how many items came back) keeps a store with one belief fully
    reliable; an empty retrieval is also 1, since nothing diffuse is there to damp.
    """
    if len(weights) <= 1 or k <= 1:
        return 1.0
    p = weights[weights > 0]
    h = float(-(p * np.log(p)).sum())
    return float(np.clip(1.0 - h / math.log(k), 0.0, 1.0))


def raw_surprisal(deviation: float, contradiction: float, cfg: PreCoMemConfig) -> float:
    """Mix of semantic deviation and max contradiction probability as a probabilistic OR.

    ``1 - (1 - w_semantic * deviation) * (1 - contradiction)``: deviation alone (a new topic) tops out at
    ``w_semantic`` and so lands in PROFILE, while a confident contradiction reaches CORRECT on its own
    (contradiction is the stronger signal in the paper's ablations). A convex mix would cap contradiction at
    ``1 - w_semantic`` and make CORRECT hinge on near-perfect reliability.
    """
    mixed = 1.0 - (1.0 - cfg.w_semantic * deviation) * (1.0 - contradiction)
    return float(np.clip(mixed, 0.0, 1.0))


def gate(effective: float, cfg: PreCoMemConfig, rng: np.random.Generator | None = None) -> Regime:
    """Route effective surprisal to a regime, honouring the ablation switches."""
    if cfg.random_routing and rng is not None:
        probs = np.asarray(cfg.random_routing_probs, dtype=float)
        regime: Regime = ("MAINTAIN", "PROFILE", "CORRECT")[int(rng.choice(3, p=probs / probs.sum()))]
    elif cfg.no_profile:
        regime = "MAINTAIN" if effective < cfg.single_threshold else "CORRECT"
    elif effective < cfg.threshold_low:
        regime = "MAINTAIN"
    elif effective < cfg.threshold_high:
        regime = "PROFILE"
    else:
        regime = "CORRECT"
    if regime == "CORRECT" and cfg.no_correct:
        regime = "PROFILE"
    return regime
