"""The setup: what one training run does. Validated once, at the edge, then frozen.

Validation is pure: no network, no GPU probing. Resolving the runtime (which device, which dtype)
happens in `harness.run.recipe` and is recorded there. Every problem in a file is reported at once, one line
each, as `field.path: what is wrong, got VALUE`.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from harness import catalog, settings
from harness.errors import ConfigError
from harness.yamlsafe import load_yaml

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


# The meaning of the fingerprint payload (see SetupConfig.fingerprint_payload and
# harness.results.run_fingerprint). Changelog:
#   2: fields at their default left out.
#   3 (2026-12-01): on a GPU, eval.precision and eval.merge_adapter default to auto (fp32, merged);
#      precision "auto" is bf16 on a CPU with bf16 in hardware (was fp32 on every CPU);
#      model.attention defaults to "auto" (eager for bf16 on a CPU; was sdpa everywhere); a local
#      data.source enters by the sha256 of its bytes, not its path; the host enters by its kind
#      (harness.provenance.host_kind), not its id, so records of a host of the same kind stand in.
#      Since a171ae8 (2026-12-03) recipe.compile "auto" is compiled layers on a bf16 CPU (was eager): run_fingerprint
#      adds that meaning as context there (harness.autorecipe), so GPU fingerprints stay as they were.
#      Since 2026-12-04 recipe.kernels defaults to "auto" (was "none"), Liger's kernels where layers run eager on an
#      NVIDIA GPU: run_fingerprint adds that meaning there the same way; every other fingerprint is as it was.
FINGERPRINT_VERSION = 3
# Recipe fields that say when a run saves its progress, not what it trains: out of the fingerprint, and out of
# what a report says differs between two setups (harness/report/settings.py).
WHEN_NOT_WHAT = ("checkpoint_every",)

# The seeds numpy (and so transformers' set_seed) accepts.
SEED_MAX = 2**32 - 1

# A local copy of the data that stands in for the hub dataset (offline machines, CI).
DATA_ENV = settings.DATA.name


# Upper bounds: far above any setup that makes sense, low enough that a typo is refused instead of
# running until killed (`recipe.steps = 2**64`) or asking for 100 million rows per step.
MAX_STEPS = 10_000_000
MAX_BATCH = 65_536
MAX_LENGTH = 1_048_576
# A setup's name and experiment become folder and file names (results/<stack>/<host>/<experiment>/<setup>/
# seed-<n>.json, plus suffixes): a 10,000-character name validated, trained, and then its record could
# never be written (issue 39). 100 characters leaves room within the 255 bytes a file name may take.
MAX_NAME = 100
# A setup file is a few kilobytes; a bigger one is not a setup (and is not read whole to find out).
MAX_CONFIG_BYTES = 1 << 20


def _numbers_and_literals(annotation: Any) -> tuple[bool, set[Any], list[tuple[Any, ...]]]:
    """Whether a field (alone or in a union) takes an int or float, its kinds, and its Literals' values."""
    args = (
        typing.get_args(annotation)
        if isinstance(annotation, types.UnionType) or typing.get_origin(annotation)
        else ()
    )
    kinds = set(args) if args else {annotation}
    literals = [typing.get_args(k) for k in kinds if typing.get_origin(k) is Literal]
    return bool(kinds & {int, float}), kinds, literals


def _takes_numbers_not_bools(annotation: Any) -> bool:
    numbers, kinds, literals = _numbers_and_literals(annotation)
    return numbers and bool not in kinds and not any(True in values for values in literals)


def _takes_numbers_not_text(annotation: Any) -> bool:
    """No `str`, no Literal of words such as "auto"."""
    numbers, kinds, literals = _numbers_and_literals(annotation)
    words = any(isinstance(value, str) for values in literals for value in values)
    return numbers and str not in kinds and not words


def _expands(path: str) -> str:
    """`~user/x` names a user this host must know (Path.expanduser raised RuntimeError: an internal error)."""
    if path.startswith("~"):
        try:
            Path(path).expanduser()
        except RuntimeError:
            user = path[1:].split("/", 1)[0]
            who = f"no user {user!r} on this host" if user else "no home folder to expand ~ to"
            raise ValueError(f"cannot expand {path!r}: {who}; give the path in full") from None
    return path


class Frozen(BaseModel):
    # No NaN or infinity in a setup: JSON cannot hold them, so a record of `recipe.lr = inf` could not be written.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        # pydantic takes `true` for 1 in an int field: `recipe.steps = true` trained one step.
        if (
            isinstance(value, bool)
            and info.field_name
            and _takes_numbers_not_bools(cls.model_fields[info.field_name].annotation)
        ):
            raise ValueError(f"must be a number, not {str(value).lower()}")
        if (
            isinstance(value, str)
            and info.field_name
            and _takes_numbers_not_text(cls.model_fields[info.field_name].annotation)
        ):
            raise ValueError(_text_for_a_number(value))
        return value


def _text_for_a_number(text: str) -> str:
    """What is wrong with text where a number belongs. pydantic turns "8" into 8: a quoted number in a setup
    file is a mistake to name, not to guess. `nan` and `inf` reach here as text from `--set` (YAML spells
    them .nan and .inf), where no quotes were written: not finite is what is wrong with them."""
    try:
        number = float(text)
    except ValueError:
        return f"must be a number, not the text {text!r}"
    if not math.isfinite(number):
        return f"must be a finite number, got {text!r}"
    return f"must be a number, not the text {text!r}; write it without quotes"


class ModelConfig(Frozen):
    """Where the weights come from: a preset name, a hub id, a local folder, or a .gguf file."""

    source: str = Field("smollm2-135m", min_length=1)

    @field_validator("source")
    @classmethod
    def _source_expands(cls, value: str) -> str:
        return _expands(value)

    gguf_file: str | None = Field(
        None, description="file name inside `source` when it is a folder or hub id holding GGUFs"
    )
    revision: str | None = None
    random_weights: bool = Field(
        False, description="build from the config with random weights: speed/memory cases only"
    )
    attention: Literal["auto", "sdpa", "eager"] = Field(
        "auto",
        description="transformers' attention implementation (same math): sdpa, its default, or eager, which "
        "trained 1.2x faster per step on a 2-core CPU in bf16 for SmolLM2's short sequences (its backward beat "
        "SDPA's CPU flash kernel). auto = eager for bf16 on a CPU, sdpa elsewhere (harness/runtime.py)",
    )


class LoraConfig(Frozen):
    rank: int = Field(16, gt=0)
    alpha: float = Field(16.0, gt=0)
    dropout: float = Field(0.0, ge=0, lt=1)
    targets: list[str] | str = Field(
        default_factory=lambda: list(DEFAULT_TARGETS),
        description="module names, or one regex matched against full module paths",
    )

    @field_validator("targets")
    @classmethod
    def _targets_not_empty(cls, value: list[str] | str) -> list[str] | str:
        if not value:
            raise ValueError("must name at least one module (or be a regex)")
        if isinstance(value, str):
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(
                    f"{value!r} is not a regular expression ({exc}); give a list of module names or a valid regex"
                ) from None
        elif any(not name.strip() for name in value):
            raise ValueError("a module name is empty; give names such as q_proj")
        return value


class RecipeConfig(Frozen):
    @model_validator(mode="before")
    @classmethod
    def _retired_micro_batches(cls, data: Any) -> Any:
        # recipe.micro_batches was removed (issue #37: two micro-batches stepped no faster, 2.876 against
        # 2.816 s; reports/benchmarks/cpu/bench_step_defaults.txt). Records made before it hold "auto":
        # what every run does now, so they still read.
        if isinstance(data, dict) and "micro_batches" in data:
            if data["micro_batches"] not in ("auto", 1):
                raise ValueError(
                    f"micro_batches = {data['micro_batches']!r} was removed (one batch per step is the only "
                    "path); delete the line"
                )
            data = {k: v for k, v in data.items() if k != "micro_batches"}
        return data

    steps: int = Field(300, gt=0, le=MAX_STEPS)
    batch_size: int = Field(8, gt=0, le=MAX_BATCH, description="per device")
    grad_accum: int = Field(1, gt=0, le=MAX_BATCH)
    lr: float = Field(2e-4, gt=0)
    warmup_steps: int = Field(10, ge=0)
    scheduler: Literal["linear", "cosine", "constant", "constant_with_warmup"] = "linear"
    weight_decay: float = Field(0.0, ge=0)
    optimizer: Literal["auto", "adamw_torch", "adamw_torch_fused", "adamw_8bit", "sgd"] = Field(
        "auto", description="auto = AdamW, fused on a GPU (same math, fewer kernel launches)"
    )
    gradient_checkpointing: bool = False
    compile: Literal["none", "layers", "graphs", "auto"] = Field(
        "none",
        description="layers = torch.compile every decoder layer for training, shapes dynamic so one compile "
        "serves every batch length (hf backend only; eval decodes uncompiled). Same math, fused kernels: "
        "sums are not bitwise the same (in bf16 on a CPU the loss curve visibly departs from eager's after "
        "the first update: reports/benchmarks/cpu/seed-2026-12-02-epyc-compiled/). graphs = replay every decoder "
        "layer's forward and backward from CUDA graphs, one capture per batch shape, batches padded to a "
        "multiple of 256 tokens (hf, one CUDA GPU, no gradient accumulation or checkpointing, not 4-bit). "
        "Both are for a small model whose step is bound by kernel launches. auto = where measured faster "
        "(harness/autorecipe.py): graphs on one NVIDIA GPU (backend hf, the settings above), layers on a CPU "
        "training in bf16 for 100 steps or more with a C++ compiler and Python's headers, none elsewhere (fp32 "
        "CPUs, ROCm: not measured yet)",
    )
    kernels: Literal["none", "liger", "auto"] = Field(
        "auto",
        description="liger = Liger kernel's Triton kernels patched into the model for training (pip install "
        "liger-kernel; hf backend on a GPU, model types Liger supports): fused linear + cross-entropy (the "
        "logits are never materialised), RMSNorm, RoPE, SwiGLU. Same math, other rounding; the record's "
        "train.kernels names what ran. none = the model's own modules. auto = liger where measured faster "
        "(harness/autorecipe.py): eager layers on an NVIDIA GPU in bf16, backend hf, liger-kernel installed; "
        "none elsewhere (graphed layers, CPUs, ROCm)",
    )
    packing: Literal["none", "wrapped"] = Field(
        "none",
        description="wrapped = TRL's 'wrapped' packing: every row's tokens concatenated and cut into rows of "
        "exactly max_length, so a step has no padding at all (batch_size × max_length tokens). Rows then "
        "attend across the examples they hold and an example may be cut in two: a speed shape (random weights, "
        "no eval), never an accuracy setup",
    )
    max_length: int = Field(512, gt=8, le=MAX_LENGTH)
    # numpy, torch and transformers' set_seed take 0 … 2**32 − 1; anything else failed only after the
    # model had loaded (and the baseline had been scored).
    seed: int = Field(3407, ge=0, le=SEED_MAX)
    checkpoint_every: NonNegativeInt | Literal["auto"] = Field(
        "auto",
        description="save the adapter, optimizer, scheduler, RNG states and data position beside the results "
        "(<results>/.checkpoints/), so a stopped seed resumes from its last checkpoint with the same result "
        "(harness/backends/checkpoint.py): every N steps; 0 = never; auto = after each minute of training (a "
        "save costs 0.27-0.43 s on an H200, where Exp A's 300 steps take 10 s). Not in the fingerprint: it changes "
        "when, not what",
    )


class DataConfig(Frozen):
    """The story's split: shuffle with `split_seed`, last `test_size` rows = test, first `train_size` of the rest = train."""

    # What a setup that names no task or data reads (harness/catalog.py): defaults of the schema, so a setup
    # that leaves them out keeps its fingerprint; asked for when a setup is built, never at import.
    source: str = Field(
        default_factory=lambda: catalog.default_source(catalog.default_task()),
        description="hub dataset id, or a local .jsonl/.json/.parquet file; default: the task's own data",
    )
    split_seed: int = Field(42, ge=0, le=SEED_MAX)
    test_size: int = Field(300, gt=0)
    train_size: int = Field(5000, gt=0)
    allow_overlap: bool = Field(
        False,
        description="allow test questions whose prompt also appears in the training rows (duplicate rows in "
        "the data put them on both sides of the split); refused by default: the score would count memorised "
        "answers",
    )

    @field_validator("source")
    @classmethod
    def _source_expands(cls, value: str) -> str:
        if not value.strip():  # "" would be read as ".", the folder you stand in
            raise ValueError("is empty; give a hub dataset id or a local .jsonl/.json/.parquet file")
        return _expands(value)


class EvalConfig(Frozen):
    enabled: bool = True
    baseline: bool = Field(True, description="also score the untrained model (cached per model + split)")
    batch_size: PositiveInt | Literal["auto"] = Field(
        "auto",
        description="questions decoded together; auto = 64 on CPU (the peer script's), every question at once "
        "on a GPU (up to 512): on the H200, 300 at once took 4.5 s against 18.1 s for plain generate in "
        "batches of 64 (dev/bench_eval.py)",
    )
    merge_adapter: bool | Literal["auto"] = Field(
        "auto",
        description="decode with the LoRA weights folded into the base (fewer kernels per token). auto = when "
        "decoding in fp32 on a GPU, where it was both faster and identical (H200: 300 of 300 answers as the "
        "peer's unmerged generate, dev/bench_eval.py); folded into bf16 weights it changed 15% of answers",
    )
    precision: Literal["auto", "train", "fp32"] = Field(
        "auto",
        description="train = decode in the precision the model trained in; fp32 = lift the model to fp32 for "
        "eval (and the baseline), so an answer does not depend on which questions share its batch: in bf16 "
        "on the H200 batching changed 1-10% of answers from run to run, in fp32 none of 60. auto = fp32 for a "
        "bf16/fp16 model of backend 'hf' on a GPU (there also faster: 4.92x the peer's generate with the "
        "adapter merged), train elsewhere (CPU: not measured; 4-bit and Unsloth cannot be lifted)",
    )
    max_new_tokens: int = Field(64, gt=0, le=MAX_LENGTH)
    limit: int | None = Field(None, gt=0, description="score only the first N test questions")
    adapter: str | None = Field(
        None,
        description="score this trained LoRA adapter instead of training one: a run record seed-N.json "
        "with seed-N.adapter/ beside it, or the adapter folder. Nothing trains; the base loads in this "
        "setup's precision, so a 4-bit-trained adapter can be scored on a bf16 base (the story lost 2.8 "
        "points that way)",
    )


class SmokeConfig(Frozen):
    enabled: bool = True
    steps: int = Field(20, gt=1, description="steps the loss must fall over (see harness/checks/smoke.py)")
    first_loss_min: float = Field(0.3, ge=0)
    first_loss_max: float = Field(5.0, gt=0)


class DivergenceConfig(Frozen):
    """NaN/inf loss or gradient norm at any step, a loss spike, NaN/inf adapter weights, no answers at all:
    status `diverged` (see harness/checks/divergence.py)."""

    enabled: bool = True
    spike_ratio: float = Field(
        10.0,
        gt=1,
        description="a step's loss above this many times the running minimum (the lowest mean of spike_window "
        "consecutive steps so far) is a divergence. Healthy committed runs (SmolLM2, batch 8, 300 steps, "
        "CPU and H200, bf16/fp32/4-bit, hf and unsloth) reached at most 4.53x (single steps: 10.9x the lowest single step); a run at lr = 1e4 spiked 33x",
    )
    spike_window: int = Field(
        10, ge=1, description="steps averaged for the running minimum: one easy batch must not set the scale"
    )


class ChecksConfig(Frozen):
    smoke: SmokeConfig = Field(default_factory=SmokeConfig)
    divergence: DivergenceConfig = Field(default_factory=DivergenceConfig)
    preflight: bool = True
    dead_adapters: bool = True


class SetupConfig(Frozen):
    """One setup. Its JSON form (with defaults filled in) is part of the run fingerprint."""

    name: str = Field("adhoc", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=MAX_NAME)
    experiment: str = Field("adhoc", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=MAX_NAME)
    task: str = Field(
        default_factory=catalog.default_task,
        description="what the model is asked and how it is scored: a folder of harness/tasks/",
    )
    backend: Literal["hf", "unsloth"] = "hf"
    precision: Literal["auto", "fp32", "bf16", "fp16", "4bit"] = Field(
        "auto",
        description="auto = bf16 on a GPU and on a CPU with bf16 in hardware (amx_bf16 or avx512_bf16 in "
        "/proc/cpuinfo), fp32 on other CPUs; resolved per host at run time and recorded (harness/runtime.py)",
    )
    device: Literal["auto", "cpu", "cuda"] = "auto"
    gpus: int = Field(
        1, ge=1, description="data-parallel processes (DDP through torchrun) per node, one GPU each"
    )
    nodes: int = Field(
        1,
        ge=1,
        description="hosts the run spans, each running `gpus` processes: every node runs the same `lorabench run`, "
        "torchrun meets them through a c10d rendezvous whose endpoint and id come from the environment "
        "($LORABENCH_RDZV_ENDPOINT or torchrun's $PET_RDZV_ENDPOINT; see harness/run/launch.py), never from "
        "the setup: where the nodes meet is not part of what the run is",
    )
    model: ModelConfig = Field(default_factory=ModelConfig)
    lora: LoraConfig = Field(default_factory=LoraConfig)
    recipe: RecipeConfig = Field(default_factory=RecipeConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    checks: ChecksConfig = Field(default_factory=ChecksConfig)

    @field_validator("task")
    @classmethod
    def _task_exists(cls, value: str) -> str:
        if value not in catalog.task_names():
            raise ValueError(f"must be one of {', '.join(catalog.task_names())}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _task_default_data(cls, data: Any) -> Any:
        # A setup that names its task but no data reads the task's own data, not the default task's.
        task = data.get("task") if isinstance(data, dict) else None
        if isinstance(task, str) and task in catalog.task_names():
            section = data.get("data") if isinstance(data.get("data"), dict) else {}
            if "source" not in section and not isinstance(data.get("data"), BaseModel):
                data = {**data, "data": {**section, "source": catalog.default_source(task)}}
        return data

    @model_validator(mode="after")
    def _scoring_an_adapter_evaluates(self) -> SetupConfig:
        if self.eval.adapter is None:
            return self
        if not self.eval.enabled:
            raise ValueError(
                "eval.adapter: scoring an adapter needs eval.enabled = true, got false; enable eval"
            )
        if self.backend != "hf" or self.world_size != 1:
            nodes = f", nodes = {self.nodes}" if self.nodes != 1 else ""
            raise ValueError(
                f"eval.adapter: an adapter is scored by backend 'hf' on one GPU or CPU, got backend "
                f"{self.backend!r} with gpus = {self.gpus}{nodes}; set backend = 'hf' and gpus = 1"
                + (" and nodes = 1" if nodes else "")
            )
        return self

    @model_validator(mode="after")
    def _packing_is_a_speed_shape(self) -> SetupConfig:
        if self.recipe.packing == "none":
            return self
        for name, value, wrong in (
            ("eval.enabled", self.eval.enabled, True),
            ("checks.preflight", self.checks.preflight, True),
            ("backend", self.backend, "unsloth"),
        ):
            if value == wrong:
                raise ValueError(
                    f"recipe.packing: {self.recipe.packing!r} lets rows attend across the examples they hold (a "
                    f"speed shape), which {name} = {value!r} cannot judge; set {name} = "
                    f"{'false' if isinstance(value, bool) else repr('hf')} or recipe.packing = 'none'"
                )
        return self

    @model_validator(mode="after")
    def _compile_is_for_hf(self) -> SetupConfig:
        if self.recipe.compile not in ("none", "auto") and self.backend != "hf":
            raise ValueError(
                f"recipe.compile: {self.recipe.compile!r} applies to backend 'hf' only, got backend "
                f"{self.backend!r} (Unsloth compiles its own kernels); set recipe.compile = 'none'"
            )
        if self.eval.precision == "fp32" and (self.precision == "4bit" or self.backend != "hf"):
            raise ValueError(
                f"eval.precision: 'fp32' lifts a bf16/fp16 model of backend 'hf', got precision "
                f"{self.precision!r} with backend {self.backend!r}; set eval.precision = 'train'"
            )
        conflicts = self.graph_conflicts() if self.recipe.compile == "graphs" else []
        if conflicts:
            name, value, fix = conflicts[0]
            raise ValueError(
                f"recipe.compile: 'graphs' cannot run with {name} = {value!r} (see "
                f"harness/backends/graphed_layers.py); set {name} = {fix} or recipe.compile = 'none'"
            )
        return self

    def graph_conflicts(self) -> list[tuple[str, Any, str]]:
        """The settings graphed layers cannot run with, as (field, value, the fix): refused for
        recipe.compile = "graphs", and what keeps "auto" eager."""
        recipe = self.recipe
        candidates = [
            ("backend", self.backend, self.backend != "hf", "'hf'"),
            ("gpus", self.gpus, self.gpus != 1, "1"),
            ("nodes", self.nodes, self.nodes != 1, "1"),
            ("recipe.grad_accum", recipe.grad_accum, recipe.grad_accum != 1, "1"),
            (
                "recipe.gradient_checkpointing",
                recipe.gradient_checkpointing,
                recipe.gradient_checkpointing,
                "false",
            ),
            ("precision", self.precision, self.precision == "4bit", "'bf16'"),
            ("device", self.device, self.device == "cpu", "'cuda'"),
        ]
        return [(name, value, fix) for name, value, conflicting, fix in candidates if conflicting]

    @property
    def world_size(self) -> int:
        """Data-parallel processes in all: `gpus` on each of `nodes` hosts."""
        return self.gpus * self.nodes

    def fingerprint_payload(self, data_identity: str | None = None) -> str:
        """The setup as the fingerprint sees it. `data_identity` stands in for `data.source` (a local
        file's content hash, see harness.results.data_identity), so where the data lies does not count."""
        # Fields at their default stay out, so adding a field whose default keeps the old behaviour
        # leaves every cached record valid. Changing what a default does must bump FINGERPRINT_VERSION.
        body = self.model_dump(mode="json", exclude_defaults=True)
        if "recipe" in body:
            for field in WHEN_NOT_WHAT:
                body["recipe"].pop(field, None)
            if not body["recipe"]:
                del body["recipe"]
        if data_identity is not None and "source" in body.get("data", {}):
            body["data"]["source"] = data_identity
        return json.dumps(
            {"fingerprint_version": FINGERPRINT_VERSION, **body}, sort_keys=True, separators=(",", ":")
        )


# Any values: a setup file's tables as read (TOML or YAML), any shape until SetupConfig validates them.
def read_config_file(path: Path) -> dict[str, Any]:
    """Read a TOML or YAML file into a plain dict (no validation yet): the one reader of config files, for
    setups, bench setups and the guard's thresholds alike, so each fault reads the same whichever it is."""
    if path.is_dir():
        raise ConfigError(str(path), [f"config file {path} is a folder; give a .toml or .yaml file"])
    if not path.is_file():
        raise ConfigError(
            str(path),
            [f"config file not found: {path} (cannot read it; give an existing .toml or .yaml file)"],
        )
    if (size := path.stat().st_size) > MAX_CONFIG_BYTES:
        raise ConfigError(
            str(path),
            [
                f"config file of {size:,} bytes: a setup is a few kB (at most {MAX_CONFIG_BYTES:,} bytes); is this the right file?"
            ],
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise ConfigError(
            str(path), [f"line {line}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x}); save it as UTF-8"]
        ) from None
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            data = load_yaml(text) or {}
        else:
            raise ConfigError(str(path), [f"unknown config format {path.suffix!r}: use .toml, .yaml or .yml"])
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), [f"cannot parse: {exc}"]) from None
    except yaml.YAMLError as exc:
        # One line: where, and what the parser expected (its own message spans a drawing of the line).
        mark = getattr(exc, "problem_mark", None)
        where = f" (at line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ConfigError(
            str(path), [f"cannot parse: {getattr(exc, 'problem', None) or exc}{where}"]
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(str(path), [f"top level must be a table of settings, got {type(data).__name__}"])
    return data


# A field set from outside the file: `--set recipe.steps=20` as the user typed it, or a typed
# (`"recipe.seed"`, 3407) from a flag, an environment variable or the suite (never turned into text).
Override = str | tuple[str, Any]


def parse_override(text: str) -> tuple[list[str], Any]:
    """`recipe.steps=20` → (["recipe", "steps"], 20). Values are parsed as YAML scalars/lists."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(
            "--set", [f"override {text!r} must look like field.path=value, e.g. recipe.steps=20"]
        )
    try:
        value = load_yaml(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise ConfigError(
            "--set", [f"override {text!r}: the value is not YAML ({getattr(exc, 'problem', None) or exc})"]
        ) from None
    return key.strip().split("."), value


# Any values: the same unvalidated tables, overrides set into them before validation.
def apply_overrides(data: dict[str, Any], overrides: Sequence[Override]) -> dict[str, Any]:
    """`data` with each override set, in order (a later one wins)."""
    merged = json.loads(json.dumps(data))
    for override in overrides:
        path, value = (
            parse_override(override) if isinstance(override, str) else (override[0].split("."), override[1])
        )
        node = merged
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError("--set", [f"{'.'.join(path)}: {part} is a value, not a section"])
            node = child
        node[path[-1]] = value
    return merged


def _describe(error: ErrorDetails, model: type[BaseModel]) -> str:
    loc = ".".join(str(p) for p in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"{loc}: unknown field, got {error['input']!r}; allowed here: {', '.join(_fields_at(model, error['loc'][:-1]))}"
    if error["type"] == "missing":
        return f"{loc}: required field is missing"
    if error["type"] == "model_type":
        # `data = "x.jsonl"` where a table was meant: name the table's fields so the fix is plain.
        fields = _fields_at(model, error["loc"])
        example = (
            f"; write [{loc}] then source = {error['input']!r}"
            if "source" in fields
            else f"; write [{loc}] then its fields"
        )
        return f"{loc}: must be a table of settings, got {error['input']!r}{example} ({', '.join(fields)})"
    if not error["loc"] and error["type"] == "value_error":
        # A rule across fields (a model validator): its message names the fields, values and fix itself.
        return str(error["ctx"]["error"])
    msg = error["msg"].removeprefix("Value error, ")
    # pydantic's "…, got a number with a fractional part" already says what came: the value joins it; a
    # message of our own that names the value ("not the text 'abc'") needs no second mention.
    value = repr(error["input"])
    named = isinstance(error["input"], str) and value in msg  # quoted text: never a bound's digits by chance
    given = "" if named else f": {value}" if ", got " in msg else f", got {value}"
    return f"{loc}: {msg[0].lower()}{msg[1:]}{given}"


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    current: Any = model
    for part in loc:
        field = current.model_fields.get(str(part)) if hasattr(current, "model_fields") else None
        if field is None:
            return []
        current = field.annotation
    return sorted(current.model_fields) if hasattr(current, "model_fields") else []


# Any values: unvalidated setup tables: validating them is this function's job.
def validate_setup(data: dict[str, Any], source: str = "setup") -> SetupConfig:
    try:
        return SetupConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, [_describe(e, SetupConfig) for e in exc.errors()]) from None


# A setup file's tables that are the suite's, not the run's (harness/suite/setups.py reads them).
CLAIMS_TABLE = "claims"
SUITE_TABLE = "suite"
SUITE_ONLY_TABLES = (CLAIMS_TABLE, SUITE_TABLE)


def load_setup(path: Path | None, overrides: Sequence[Override] = ()) -> SetupConfig:
    """The file (if any), then `field.path=value` overrides, validated together.

    A benchmark setup file's `[claims]` and `[suite]` tables are the suite's (the claims to judge, how its
    cases run), not the run's: they are set aside here and never enter the fingerprint."""
    data = read_config_file(path) if path else {}
    for table in SUITE_ONLY_TABLES:
        if table in data and not isinstance(data[table], dict):
            # Dropped unread before issue 39: `claims = 5` ran with no claim and said nothing.
            raise ConfigError(
                str(path),
                [
                    f"{table}: must be a table of the suite's settings, got {data[table]!r}; write [{table}] then its fields"
                ],
            )
        data.pop(table, None)
    data = apply_overrides(data, overrides)
    return validate_setup(data, source=str(path) if path else "flags")
