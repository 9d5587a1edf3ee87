"""SNLI reading and calibration shared by the NLI training scripts (never used at run time)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

LABELS = ("entailment", "neutral", "contradiction")
"""Class order of every NLI model we train; the engine reads the contradiction column by this order."""


def read_snli(path: Path) -> tuple[list[str], list[str], np.ndarray]:
    """Premises, hypotheses and label indices of an SNLI 1.0 jsonl file, pairs without a majority label dropped."""
    prem, hyp, lab = [], [], []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec["gold_label"] not in LABELS:  # "-" = no annotator majority
                continue
            prem.append(rec["sentence1"])
            hyp.append(rec["sentence2"])
            lab.append(LABELS.index(rec["gold_label"]))
    return prem, hyp, np.asarray(lab, dtype=np.int64)


def fit_temperature(logits: torch.Tensor, y: torch.Tensor) -> float:
    """Temperature scaling (Guo et al. 2017): one scalar minimising held-out NLL."""
    log_t = torch.zeros(1, requires_grad=True)
    opt = torch.optim.LBFGS([log_t], lr=0.1, max_iter=200)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(logits / log_t.exp(), y)
        loss.backward()
        return loss

    opt.step(closure)
    return float(log_t.detach().exp())


def expected_calibration_error(probs: np.ndarray, y: np.ndarray, bins: int = 15) -> float:
    """Top-label ECE with equal-width confidence bins."""
    conf, pred = probs.max(axis=1), probs.argmax(axis=1)
    edges = np.linspace(0.0, 1.0, bins + 1)
    err = 0.0
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        m = (conf > lo) & (conf <= hi)
        if m.any():
            err += m.mean() * abs(float((pred[m] == y[m]).mean()) - float(conf[m].mean()))
    return float(err)
