"""Look at a model's architecture before loading it: built on the meta device from its config alone.

In seconds, no weights read: the module tree (repeated layers folded), parameters by tower (language,
vision, audio, projector) and kind, which modules a LoRA target list or regex hits (PEFT's own rule) and
which of those PEFT cannot wrap. Not covered: `trust_remote_code` models; quantized layers (inspected
unquantized).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.json_types import JsonObject

TOWERS = ("language", "vision", "audio", "projector")
KINDS = ("embedding", "linear", "norm", "conv", "other")

_VISION = re.compile(r"(^|\.)(vision\w*|visual|vit|image\w*|siglip\w*|patch_embed\w*)(\.|$)")
_AUDIO = re.compile(r"(^|\.)(audio\w*|speech\w*|whisper\w*|sound\w*)(\.|$)")
_PROJECTOR = re.compile(r"(^|\.)(multi_modal_projector|mm_projector|\w*projector)(\.|$)")
_INDEX = re.compile(r"\.\d+(?=\.|$)")


@dataclass(frozen=True)
class TargetHit:
    """One target-matched module; `pattern` folds layer indices (`model.layers.N.self_attn.q_proj`)."""

    name: str
    type_name: str
    tower: str
    is_wrappable: bool


@dataclass(frozen=True)
class Inspection:
    source: str
    model_type: str
    model_class: str
    total_params: int
    params: dict[str, dict[str, int]]  # tower → kind → parameter count
    targets: list[str] | str
    hits: tuple[TargetHit, ...]
    unwrappable_with_params: dict[
        str, int
    ]  # type name → count of leaf modules holding weights PEFT cannot wrap
    tree: str = field(repr=False)

    @property
    def unwrappable_hits(self) -> tuple[TargetHit, ...]:
        return tuple(h for h in self.hits if not h.is_wrappable)

    def hits_by_tower(self) -> dict[str, int]:
        return dict(Counter(h.tower for h in self.hits))

    def hit_patterns(self) -> list[tuple[str, str, int]]:
        """(folded name, type, count) for each distinct target pattern, in model order."""
        counts: dict[tuple[str, str], int] = {}
        for hit in self.hits:
            key = (_INDEX.sub(".N", hit.name), hit.type_name)
            counts[key] = counts.get(key, 0) + 1
        return [(name, type_name, n) for (name, type_name), n in counts.items()]

    def to_dict(self) -> JsonObject:
        return {
            "source": self.source,
            "model_type": self.model_type,
            "model_class": self.model_class,
            "total_params": self.total_params,
            "params": self.params,
            "targets": self.targets,
            "hits_by_tower": self.hits_by_tower(),
            "hits": [{"pattern": p, "type": t, "count": n} for p, t, n in self.hit_patterns()],
            "unwrappable_hits": [{"name": h.name, "type": h.type_name} for h in self.unwrappable_hits],
            "unwrappable_with_params": self.unwrappable_with_params,
        }


def load_config(source: str | Path, revision: str | None = None) -> Any:
    """A transformers config from a preset name, a model folder, a config.json file or a hub id."""
    from harness.config import ModelConfig
    from harness.hub import check_hub_model
    from harness.models import ARCH_PRESETS, PRESETS, resolve_model

    text = str(source)
    if not text.strip():  # Path("") is ".", the folder you stand in: never what an empty argument meant
        raise UserError(
            "MODEL is empty; give a preset (e.g. smollm2-135m), a model folder, a config.json or a hub id"
        )
    path = Path(text).expanduser()
    if text in ARCH_PRESETS or text in PRESETS:
        path = resolve_model(ModelConfig(source=text, random_weights=text in ARCH_PRESETS)).path
    json_file = path.is_file() and path.suffix == ".json"
    if not (json_file or path.is_dir()):  # then a hub id
        if text.startswith((".", "/", "~")) or text.count("/") != 1:
            raise UserError(
                f"MODEL {text!r}: not a preset, an existing folder or config.json, nor a hub id owner/name"
            )
        # Offline or unreachable, the hub client retries for ~30 s before it gives up: asked first, in
        # milliseconds, and before transformers' import (seconds).
        check_hub_model(text, "config.json", revision, field="MODEL", local="model folder or config.json")
    from transformers import AutoConfig

    if json_file:
        return (
            AutoConfig.from_pretrained(str(path.parent)) if path.name == "config.json" else _config_file(path)
        )
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UserError(
                f"MODEL {path}: no config.json in this folder; give a model folder, a config.json or a hub id"
            )
        return AutoConfig.from_pretrained(str(path))
    try:
        return AutoConfig.from_pretrained(text, revision=revision)
    except (OSError, ValueError) as exc:
        raise UserError(
            f"MODEL {text!r}: cannot read its config from the hub or the local cache ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:200]}); run `lorabench fetch --model {text}` where the hub is reachable"
        ) from None


def _config_file(path: Path) -> Any:
    import json

    from transformers import AutoConfig

    settings = json.loads(path.read_text(encoding="utf-8"))
    if "model_type" not in settings:
        raise UserError(f"MODEL {path}: the JSON has no model_type; it must be a transformers config")
    return AutoConfig.for_model(settings.pop("model_type"), **settings)


def build_on_meta(config: Any) -> Any:
    """The model class for this config, instantiated on the meta device (shapes, no memory, no weights).

    Causal LM first (what lorabench trains); multimodal configs that no causal-LM class takes are built
    as image/audio-text-to-text models, then as a bare `AutoModel`."""
    import torch
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForImageTextToText

    reasons = []
    for auto in (AutoModelForCausalLM, AutoModelForImageTextToText, AutoModel):
        try:
            with torch.device("meta"):
                return auto.from_config(config)
        except ValueError as exc:  # "Unrecognized configuration class … for this kind of AutoModel"
            reasons.append(f"{auto.__name__}: {str(exc).splitlines()[0][:120]}")
    raise UserError(
        f"model_type {config.model_type!r}: no transformers model class takes this config ({'; '.join(reasons)})"
    )


def tower_of(name: str) -> str:
    if _AUDIO.search(name):
        return "audio"
    if _VISION.search(name):
        return "vision"
    if _PROJECTOR.search(name):
        return "projector"
    return "language"


def kind_of(module: Any) -> str:
    type_name = type(module).__name__
    if "Embedding" in type_name:
        return "embedding"
    if type_name in ("Linear", "Conv1D") or type_name.endswith("Linear"):
        return "linear"
    if "Norm" in type_name:
        return "norm"
    if type_name.startswith("Conv"):
        return "conv"
    return "other"


def is_wrappable(module: Any) -> bool:
    """Whether PEFT's LoRA can replace this module: the base layers its dispatch accepts
    (peft/tuners/lora/layer.py `dispatch_default`)."""
    import torch
    from transformers.pytorch_utils import Conv1D

    return isinstance(
        module,
        (
            torch.nn.Linear,
            torch.nn.Embedding,
            torch.nn.Conv1d,
            torch.nn.Conv2d,
            torch.nn.Conv3d,
            torch.nn.MultiheadAttention,
            Conv1D,
        ),
    )


def check_targets(targets: list[str] | str) -> None:
    if isinstance(targets, str):
        try:
            re.compile(targets)
        except re.error as exc:
            raise UserError(f"--regex: {targets!r} is not a regular expression ({exc})") from None


def target_matcher(targets: list[str] | str) -> Any:
    """PEFT's own matching rule (list = module-name suffixes, str = regex over the full path)."""
    check_targets(targets)
    from peft import LoraConfig
    from peft.tuners.tuners_utils import check_target_module_exists

    config = LoraConfig(target_modules=targets)
    return lambda name: bool(check_target_module_exists(config, name))


def count_params(model: Any) -> tuple[int, dict[str, dict[str, int]]]:
    by_tower: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(KINDS, 0))
    seen: set[int] = set()  # tied weights (embedding = lm_head) are counted once
    for name, module in model.named_modules():
        for param in module.parameters(recurse=False):
            if id(param) in seen:
                continue
            seen.add(id(param))
            by_tower[tower_of(name)][kind_of(module)] += param.numel()
    params = {tower: by_tower[tower] for tower in TOWERS if tower in by_tower}
    return sum(sum(kinds.values()) for kinds in params.values()), params


def render_tree(model: Any, max_depth: int = 4) -> str:
    """The module tree, one line per module with its parameter count; runs of same-typed numbered
    children (decoder layers) fold into one line `layers.0-29 ×30`, of which the first is expanded."""
    lines: list[str] = []

    def visit(module: Any, label: str, depth: int) -> None:
        size = sum(p.numel() for p in module.parameters())
        head = (
            f"{label} ({type(module).__name__}, {human_count(size)})"
            if label
            else f"{type(module).__name__} ({human_count(size)})"
        )
        lines.append("  " * depth + head)
        if depth >= max_depth:
            return
        children = list(module.named_children())
        index = 0
        while index < len(children):
            name, child = children[index]
            run = 1
            if name.isdigit():
                while (
                    index + run < len(children)
                    and children[index + run][0].isdigit()
                    and type(children[index + run][1]) is type(child)
                ):
                    run += 1
            label_here = name if run == 1 else f"{name}-{children[index + run - 1][0]} ×{run}"
            visit(child, label_here, depth + 1)
            index += run

    visit(model, "", 0)
    return "\n".join(lines)


def human_count(n: int) -> str:
    for unit, size in (("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= size:
            return f"{n / size:.2f}{unit}"
    return str(n)


def inspect_model(
    source: str | Path, targets: list[str] | str, *, revision: str | None = None, max_depth: int = 4
) -> Inspection:
    # A bad regex, then a model that cannot be found, fail before peft's import (seconds).
    check_targets(targets)
    config = load_config(source, revision)
    matches = target_matcher(targets)
    model = build_on_meta(config)
    hits = tuple(
        TargetHit(name, type(module).__name__, tower_of(name), is_wrappable(module))
        for name, module in model.named_modules()
        if name and matches(name)
    )
    unwrappable = Counter(
        type(module).__name__
        for _, module in model.named_modules()
        if next(module.children(), None) is None
        and any(True for _ in module.parameters(recurse=False))
        and not is_wrappable(module)
    )
    total, params = count_params(model)
    return Inspection(
        source=str(source),
        model_type=config.model_type,
        model_class=type(model).__name__,
        total_params=total,
        params=params,
        targets=targets,
        hits=hits,
        unwrappable_with_params=dict(unwrappable),
        tree=render_tree(model, max_depth),
    )
