"""What every backend shares: the runtime it was given, the observers it must call each step, the
outcome it returns, and the tokenized training examples (prompt masked out of the loss)."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from harness.config import SetupConfig
from harness.tasks.registry import render_prompt
from harness.tasks.sql.data import SqlExample

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class Runtime:
    """The resolved device and precision (the setup may say `auto`)."""

    device: str
    precision: str

    @property
    def dtype(self) -> torch.dtype:
        # 4-bit keeps its compute (and the adapter) in bf16.
        return DTYPES.get(self.precision, torch.bfloat16)


# Every test question decoded in one batch on a GPU, up to this many (SmolLM2's KV cache for 300
# questions of ~170 tokens: about 1 GB in bf16, by arithmetic, not measured).
GPU_EVAL_BATCH = 512
CPU_EVAL_BATCH = 64


def eval_batch_size(configured: int | str, device: str) -> int:
    """`eval.batch_size`, with auto resolved for the device (see EvalConfig)."""
    if configured != "auto":
        return int(configured)
    return GPU_EVAL_BATCH if device == "cuda" else CPU_EVAL_BATCH


def merges_adapter(setup: SetupConfig, device: str) -> bool:
    """Whether eval decodes with the LoRA weights folded in: `eval.merge_adapter`, auto resolved for the
    device (see EvalConfig); never for a quantized base (the merge would re-quantize its weights) nor
    for Unsloth, which decodes through its own patched model."""
    configured = setup.eval.merge_adapter
    wanted = device == "cuda" if configured == "auto" else bool(configured)
    return wanted and setup.backend == "hf" and setup.precision != "4bit"


def resolve_runtime(device: str, precision: str) -> Runtime:
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if precision == "auto":
        precision = "bf16" if device == "cuda" else "fp32"
    return Runtime(device, precision)


class StepObserver(Protocol):
    """Called by the backend after every optimizer step; a returned string stops training with that reason."""

    def on_step(self, step: int, loss: float) -> str | None: ...


@dataclass
class TrainOutcome:
    model: Any
    losses: list[float] = field(default_factory=list)
    stopped_reason: str | None = None
    train_s: float = 0.0
    preflight_s: float | None = None
    step_ends: list[float] = field(default_factory=list)  # perf_counter at the start, then after each optimizer step
    tokens: int | None = None
    samples: int = 0
    trainable_params: int = 0
    total_params: int = 0
    checks: dict[str, Any] = field(default_factory=dict)  # name → Verdict, from preflight and post checks
    graphs: Any = None  # GraphStats (harness/backends/graphed_layers.py) of a recipe.compile = "graphs" span


@dataclass(frozen=True)
class TokenizedExample:
    input_ids: list[int]
    completion_mask: list[int]  # 1 where the token is part of the answer (and so in the loss)


def end_of_turn(tokenizer: Any) -> str | None:
    """The text the chat template puts after an assistant answer (e.g. `<|im_end|>`), so the model learns to stop.

    Taken from the template rather than `eos_token`: GGUF metadata can name a different EOS than the one
    the template closes a turn with (SmolLM2's GGUF says `<|im_start|>`)."""
    marker = "LORABENCH_ANSWER"
    try:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": "q"}, {"role": "assistant", "content": marker}], tokenize=False
        )
    except Exception:
        return tokenizer.eos_token
    tail = text.split(marker, 1)[1].strip() if marker in text else ""
    return tail or tokenizer.eos_token


def tokenize_examples(tokenizer: Any, examples: Sequence[SqlExample]) -> list[TokenizedExample]:
    """Prompt tokens and answer tokens separately, so the answer boundary is exact (no re-tokenization merge)."""
    eot = end_of_turn(tokenizer) or ""
    out = []
    for ex in examples:
        prompt_ids = tokenizer(render_prompt(tokenizer, ex), add_special_tokens=False).input_ids
        answer_ids = tokenizer(ex.answer + eot, add_special_tokens=False).input_ids
        out.append(TokenizedExample(prompt_ids + answer_ids, [0] * len(prompt_ids) + [1] * len(answer_ids)))
    return out


def steady_step_seconds(step_ends: Sequence[float]) -> float | None:
    """Median seconds per optimizer step, leaving out the first tenth of the steps (at least one): the
    warm-up (allocator, cuBLAS handles, a compile) that a longer run would amortise. The logged loss is
    read from the device every step, so the host's clock follows the GPU's."""
    durations = [b - a for a, b in itertools.pairwise(step_ends)]
    steady = durations[max(1, len(durations) // 10) :]
    return round(statistics.median(steady), 4) if steady else None


def count_params(model: Any) -> tuple[int, int]:
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    return trainable, total
