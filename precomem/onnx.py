"""The MiniLM BERT modules through ONNX Runtime: exported once, kept in a cache folder of our own.

Exporting needs torch and sentence-transformers, whose imports alone cost ~7 s, and the export ~2 s more: paid
by every evaluation worker, that was a tenth of a run. So an export is written (atomically) to
``$PRECOMEM_ONNX_CACHE`` (default ``$XDG_CACHE_HOME/precomem/onnx``, else ``~/.cache/precomem/onnx``), named by
a digest of the weights' bytes, the exporter's versions and the output; a later process loads it with
ONNX Runtime and the model folder's ``tokenizer.json`` alone (:class:`FastTokenizer`, the same ids as
transformers' fast tokenizer), without importing torch. ``PRECOMEM_ONNX_CACHE=off`` keeps exports in memory.

On a CPU, ONNX Runtime runs the same all-MiniLM-L6-v2 in float32 about twice as fast as torch for one sentence
(cosine to torch's vectors 0.9999999; ``benchmarks/encoders.py``). Int8 dynamic quantisation is faster still but
moves vectors (mean cosine to torch ~0.99, down to ~0.95 for a one-word turn such as "Thanks!"), enough to flip
close calls, so it is only ever an explicit choice.

A runtime is named the same way everywhere: ``PreCoMemConfig.runtime`` and the ``DIMOBENCH_RUNTIME`` variable
(``auto``, ``torch``, ``onnx``, ``onnx-int8``). ``auto`` takes the variable when it is set, else ONNX float32
when ``onnxruntime`` and ``onnx`` import, else torch; under ``auto`` a failed export or session falls back to
torch (and the model reports ``runtime == "torch"``), while an explicit ``onnx`` or ``onnx-int8`` that cannot
load raises :class:`RuntimeUnavailable`.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias

import numpy as np

from precomem.export_cache import OPSET, cache_folder, cache_key, read_cached, write_cached

RUNTIMES = ("auto", "torch", "onnx", "onnx-int8")
"""The runtime names the config and ``DIMOBENCH_RUNTIME`` accept."""
ENV = "DIMOBENCH_RUNTIME"
"""Environment variable that ``auto`` follows when it is set."""
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
DEVICES = ("cpu", "cuda")
"""Where the neural models (MiniLM, the NLI cross-encoder) can run."""
DEVICE_ENV = "DIMOBENCH_DEVICE"
"""Environment variable naming the device when the config names none (``cpu`` when unset)."""


class RuntimeUnavailable(RuntimeError):
    """An explicit ONNX runtime was asked for and could not be loaded."""


def onnx_available() -> bool:
    """True when ``onnxruntime`` and ``onnx`` (the exporter's output format) can be imported."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def device_name(device: str | None = None) -> str:
    """``device`` when given, else ``DIMOBENCH_DEVICE``, else ``cpu``, unchecked (see :func:`requested_device`)."""
    return device or os.environ.get(DEVICE_ENV, "").strip().lower() or "cpu"


def requested_device(device: str | None = None) -> str:
    """The device the models run on: ``device`` when given, else ``DIMOBENCH_DEVICE``, else ``cpu``.

    A GPU is never assumed: ``cuda`` that torch cannot see raises :class:`RuntimeUnavailable` here, before any
    model loads, and unknown names raise ``ValueError``."""
    name = device_name(device)
    if name not in DEVICES:
        raise ValueError(f"device {name!r}: unknown (choose {', '.join(DEVICES)})")
    if name == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise RuntimeUnavailable(f"device 'cuda' requested but torch {torch.__version__} sees no CUDA device")
    return name


def requested_runtime(runtime: str, device: str = "cpu") -> tuple[str, bool]:
    """``(runtime to try, explicit)`` for a configured runtime on ``device``: ``auto`` follows
    ``DIMOBENCH_RUNTIME`` (which counts as explicit), else ONNX when importable on the CPU and torch on a GPU
    (ONNX Runtime runs here on its CPU provider only, so an ONNX runtime on ``cuda`` is a ``ValueError``).
    Unknown names raise ``ValueError``."""
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime {runtime!r}: unknown (choose {', '.join(RUNTIMES)})")
    want, explicit = runtime, runtime != "auto"
    if not explicit:
        env = os.environ.get(ENV, "").strip().lower() or "auto"
        if env not in RUNTIMES:
            raise ValueError(f"{ENV}={env!r}: unknown runtime (choose {', '.join(RUNTIMES)})")
        want, explicit = env, env != "auto"
    if device != "cpu":
        if explicit and want != "torch":
            raise ValueError(f"runtime {want!r} runs on the CPU only; on device {device!r} use torch or auto")
        return "torch", explicit
    if not explicit:
        want = "onnx" if onnx_available() else "torch"
    return want, explicit


Threads: TypeAlias = int | None | Literal["auto"]
"""A per-turn thread setting: a count, None (the process's thread count, :func:`process_threads`) or ``auto``
(see :func:`per_turn_threads`)."""


def per_turn_threads(setting: Threads, on_onnx: bool) -> int | None:
    """The intra-op threads for per-turn work (a few sentences, a few NLI pairs) on the runtime that actually ran:
    ``auto`` is the process's count on ONNX Runtime, which does not spin (two threads halve a cross-encoder call on
    two cores, with bitwise the same logits), and one thread on torch, whose barriers on a busy machine cost 30x;
    a count or None is taken as it is (None: the process's)."""
    if setting == "auto":
        return None if on_onnx else 1
    return setting


class OnnxBert:
    """One exported module and its sessions, one per thread count (ONNX Runtime fixes threads per session)."""

    def __init__(self, model: bytes, output: str) -> None:
        """Keep the serialised model; sessions are made on demand."""
        self._model = model
        self.output = output
        self._sessions: dict[int, Any] = {}
        self._lock = threading.Lock()

    def session(self, threads: int) -> Any:
        """The session running on ``threads`` intra-op threads (made once)."""
        threads = max(1, int(threads))
        with self._lock:
            if threads not in self._sessions:
                import onnxruntime as ort

                opts = ort.SessionOptions()
                opts.intra_op_num_threads = threads
                opts.inter_op_num_threads = 1
                opts.log_severity_level = 3  # the optimiser's notes about unused initialisers are noise
                # Spinning workers would burn the cores a shared machine's other processes need.
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                self._sessions[threads] = ort.InferenceSession(self._model, opts, providers=["CPUExecutionProvider"])
            return self._sessions[threads]

    def run(self, batch: Mapping[str, Any], threads: int) -> np.ndarray:
        """The module's output (last hidden state or logits) for a tokenised batch of numpy arrays."""
        sess = self.session(threads)
        feed = {i.name: np.asarray(batch[i.name], dtype=np.int64) for i in sess.get_inputs()}
        return np.asarray(sess.run([self.output], feed)[0], dtype=np.float32)


_EXPORTS: dict[tuple[str, str, bool], OnnxBert] = {}
_LOCK = threading.Lock()
def process_threads() -> int:
    """The process's intra-op thread count: torch's when torch is loaded, else ``OMP_NUM_THREADS`` (what an
    evaluation worker sets before anything loads), else the machine's cores. ONNX Runtime's outputs are the same
    bits on any count, so this only decides speed."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return int(torch.get_num_threads())
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class FastTokenizer:
    """A model folder's ``tokenizer.json`` run by the ``tokenizers`` library as transformers' fast tokenizer runs
    it with ``padding=True, truncation=True, max_length=...``: pad to the longest row, truncate longest first.
    It gives the same ids (``tests/precomem/test_onnx_cache.py``) without importing transformers or torch."""

    def __init__(self, folder: Path, max_length: int) -> None:
        """Load ``folder/tokenizer.json``; rows are cut at ``max_length`` tokens."""
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(max_length=max_length, strategy="longest_first")
        pad = tok.token_to_id("[PAD]")
        tok.enable_padding(pad_id=0 if pad is None else pad, pad_token="[PAD]", pad_type_id=0)
        self._tok = tok

    def __call__(self, texts: Sequence[str], pairs: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """``input_ids``, ``attention_mask`` and ``token_type_ids`` as int64 arrays, one row per text (or pair)."""
        rows = self._tok.encode_batch(list(texts) if pairs is None else list(zip(texts, pairs, strict=True)))
        return {"input_ids": np.array([r.ids for r in rows], dtype=np.int64),
                "attention_mask": np.array([r.attention_mask for r in rows], dtype=np.int64),
                "token_type_ids": np.array([r.type_ids for r in rows], dtype=np.int64)}


def _export(module: Any, output: str, example: Mapping[str, Any]) -> bytes:
    import torch

    class _Keywords(torch.nn.Module):
        # BertModel.forward takes its inputs by keyword; the exporter passes them by position.
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return getattr(out, output)

    args = tuple(torch.as_tensor(np.asarray(example[k], dtype=np.int64)) for k in INPUTS)
    buf = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on constant-folded shape checks
        # The legacy exporter writes to any binary file object; the stubs name only paths.
        torch.onnx.export(_Keywords(module).eval(), args, buf,  # type: ignore[arg-type]
                          input_names=list(INPUTS), output_names=[output],
                          dynamic_axes={k: {0: "batch", 1: "seq"} for k in (*INPUTS, output)},
                          opset_version=OPSET, dynamo=False)
    return buf.getvalue()


def _quantize(model: bytes) -> bytes:
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # quantize_dynamic writes only to a path: our own temporary folder, removed when it is done.
    with tempfile.TemporaryDirectory(prefix="precomem-int8-") as tmp:
        out = Path(tmp) / "int8.onnx"
        level = logging.getLogger().level
        logging.getLogger().setLevel(logging.ERROR)  # its advice to pre-process the graph first is noise here
        try:
            quantize_dynamic(onnx.load_from_string(model), out, per_channel=True, reduce_range=True,
                             weight_type=QuantType.QUInt8)
        finally:
            logging.getLogger().setLevel(level)
        return out.read_bytes()


def onnx_module(key: str, module: Callable[[], Any], output: str, example: Mapping[str, Any], quantized: bool,
                files: Sequence[Path] = ()) -> OnnxBert:
    """A BERT (taking ``input_ids``, ``attention_mask``, ``token_type_ids``) on ONNX Runtime, once per process
    under ``key`` (the caller's name for the weights). With ``files`` (the weights it is built from), the export
    is read from and written to :func:`cache_folder`, and ``module()`` (which builds the torch module) is only
    called when no cached copy loads. ``output`` is the attribute of its result to return (``last_hidden_state``
    or ``logits``); ``example`` is a tokenised numpy batch to trace with (give it padding, so that the mask's path
    is traced). Raises whatever the import, export or first session raises."""
    import onnxruntime  # noqa: F401  (a missing runtime must fail here, not fall back half-way)

    with _LOCK:
        cache = (key, output, quantized)
        if cache not in _EXPORTS:
            folder = cache_folder() if files else None
            disk = cache_key(output, quantized, files) if folder is not None else ""
            runner = _cached_runner(folder, disk, output)
            if runner is None:
                fp32 = _EXPORTS.get((key, output, False))
                if fp32 is not None:
                    model = fp32._model
                else:
                    import onnx  # noqa: F401  (the exporter needs it)

                    model = _export(module(), output, example)
                runner = OnnxBert(_quantize(model) if quantized else model, output)
                runner.session(1)  # a model that exports but does not load must fail now, not on first use
                write_cached(folder, disk, runner._model)
            _EXPORTS[cache] = runner
        return _EXPORTS[cache]


def _cached_runner(folder: Path | None, key: str, output: str) -> OnnxBert | None:
    """The cached export as a loaded runner, or None (no cache, no file, or a file that does not load)."""
    model = read_cached(folder, key)
    if model is None:
        return None
    runner = OnnxBert(model, output)
    try:
        runner.session(1)
    except Exception:  # a damaged file is exported again and replaced, never trusted
        return None
    return runner


def choose(runtime: str, build: Callable[[bool], OnnxBert], what: str,
           device: str = "cpu") -> tuple[str, OnnxBert | None]:
    """``(runtime that will run, its ONNX module or None for torch)``; ``build(quantized)`` exports the model.

    Under ``auto`` any failure means torch; an explicit ONNX runtime that fails raises
    :class:`RuntimeUnavailable` naming ``what``."""
    want, explicit = requested_runtime(runtime, device)
    if want == "torch":
        return "torch", None
    try:
        return want, build(want == "onnx-int8")
    except Exception as exc:  # import, export and session errors have no common base
        if explicit:
            raise RuntimeUnavailable(f"runtime {want!r} requested for {what} but it could not be loaded: "
                                     f"{type(exc).__name__}: {exc}") from exc
        return "torch", None


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mask-weighted mean over tokens, then L2 normalisation: the sentence-transformers pipeline of MiniLM."""
    m = np.asarray(mask, dtype=np.float32)[:, :, None]
    vec = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
    vec /= np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)
    return np.ascontiguousarray(vec, dtype=np.float32)


def runtimes(encoder: object, verifier: object) -> dict[str, str]:
    """The runtime keys of ``PreCoMem.encoders()``: ``runtime`` (the embedding's) and ``nli_runtime`` (the NLI
    cross-encoder's), each only where that component runs a neural model of its own (not hashing, the rule, or
    the head on the embeddings), so the report of a model-free engine is as it was; ``device`` off the CPU."""
    out = {}
    for key, part in (("runtime", encoder), ("nli_runtime", verifier)):
        runtime = getattr(part, "runtime", None)
        if runtime is not None:
            out[key] = str(runtime)
    devices = {str(getattr(part, "device", "cpu")) for part in (encoder, verifier)} - {"cpu"}
    if devices:  # named only off the CPU, so that a CPU run reports what it always did
        out["device"] = devices.pop()
    return out
