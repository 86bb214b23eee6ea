"""Model FLOPs utilisation: training FLOPs per second against the GPU's bf16 dense peak.

Peaks are dense (no 2:4 sparsity) bf16 matrix throughput, one row per GPU model, each with its source.
A row marked unverified was not confirmed against the vendor's own page while writing this table;
its value and the reason are stated so a reader can check it.

FLOPs counted (`training_flops`), per token, for a model of N parameters of which N_t are trainable:
  forward                             2·N
  backward, activation gradients      2·N      (flow through every layer, frozen or not)
  backward, weight gradients          2·N_t    (only trainable weights get them; LoRA: tiny)
so full fine-tuning gives the familiar 6·N and LoRA about 4·N. Gradient checkpointing recomputes the
forward (another 2·N of hardware work), but MFU counts *model* FLOPs: recomputation is overhead the
setup chose, so it lowers MFU instead of being credited. `hardware_flops` counts it, for HFU.
Attention's sequence-length term (`attention_flops_per_token`: 12·layers·seq·width per token, the
PaLM paper's count for forward and backward) is added where the caller knows the model's layers, width
and sequence length; records that do not carry them get MFU without it (a few percent at the story's
prompt lengths of ≈ 100–300 tokens), and the report says which.

Steady state (`steady_rate`): MFU and tokens/s are read over the same steps as the steady step time,
the first tenth of the steps (warm-up, graph capture, allocator growth) left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.backends.common import TrainOutcome
    from harness.config import SetupConfig
    from harness.runtime import Runtime


@dataclass(frozen=True)
class Peak:
    model: str
    match: tuple[str, ...]  # lower-case substrings of the torch device name (all must occur)
    bf16_dense_tflops: float
    source: str
    verified: bool
    note: str = ""


PEAKS: tuple[Peak, ...] = (
    Peak(
        "NVIDIA H200 SXM",
        ("h200",),
        989.0,
        "https://www.nvidia.com/en-us/data-center/h200/",
        True,
        "the sheet's 1,979 TFLOPS BF16 is with sparsity; dense is half",
    ),
    Peak(
        "NVIDIA H100 SXM",
        ("h100",),
        989.0,
        "https://www.nvidia.com/en-us/data-center/h100/",
        True,
        "SXM figure; the sheet's 1,979 TFLOPS is with sparsity. H100 PCIe (756 dense) also matches 'h100'",
    ),
    Peak(
        "AMD Instinct MI300X",
        ("mi300x",),
        1307.4,
        "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html",
        False,
        "unverified: taken from a third-party comparison citing AMD's datasheet (2,614.9 with sparsity)",
    ),
    Peak(
        "AMD Radeon RX 7900 XTX",
        ("7900 xtx",),
        122.8,
        "https://www.amd.com/en/products/graphics/desktops/radeon/7000-series/amd-radeon-rx-7900xtx.html",
        False,
        "unverified: AMD's 'peak half precision' figure, not found by search; equals 96 CU × 2.5 GHz × "
        "512 FLOP/clock/CU (WMMA, dual issue); no separate bf16 figure published",
    ),
    Peak(
        "AMD Radeon 8060S (Strix Halo)",
        ("8060s",),
        59.4,
        "https://www.amd.com/en/products/processors/laptop/ryzen/ai-300-series/amd-ryzen-ai-max-plus-395.html",
        False,
        "unverified: no AMD figure found; derived as 40 CU × 2.9 GHz × 512 FLOP/clock/CU like the 7900 XTX "
        "(third-party sites list 29.7 TFLOPS vector FP16, i.e. without WMMA)",
    ),
)


def find_peak(gpu_name: str) -> Peak | None:
    name = gpu_name.lower()
    return next((p for p in PEAKS if all(m in name for m in p.match)), None)


def training_flops(
    n_params: int,
    n_trainable: int,
    tokens: float,
    gradient_checkpointing: bool,
    attention_per_token: float = 0.0,
) -> float:
    """Model FLOPs of training on `tokens` tokens: (4·N + 2·N_trainable) per token, plus
    `attention_per_token` (`attention_flops_per_token`; 0 when the caller cannot know it; see module doc).

    `gradient_checkpointing` does not change the count: model FLOPs exclude recomputation by design.
    It is a parameter so callers state it and the choice is visible where MFU is computed."""
    if min(n_params, n_trainable, tokens) < 0 or n_trainable > n_params:
        raise ValueError(
            f"need 0 ≤ trainable ≤ params and tokens ≥ 0, got {n_params=}, {n_trainable=}, {tokens=}"
        )
    del gradient_checkpointing  # counted in hardware_flops only
    return float(tokens) * (4 * n_params + 2 * n_trainable + attention_per_token)


def attention_flops_per_token(n_layers: int, width: int, seq_len: float) -> float:
    """Attention's score and value products, forward and backward, per token (PaLM's 12·L·T·d; causal
    masking not halved, as PaLM counts it)."""
    return 12.0 * n_layers * width * seq_len


def steady_window(steps_done: int) -> tuple[int, int]:
    """The steps (1-based, inclusive) the steady figures read: the first tenth left out as warm-up, as
    `TrainStats.step_s` is taken (at least one step left out when there are two or more)."""
    if steps_done < 1:
        raise ValueError(f"need at least one step, got {steps_done}")
    skip = max(1, steps_done // 10) if steps_done > 1 else 0
    return skip + 1, steps_done


@dataclass(frozen=True)
class SteadyRate:
    step_s: float  # median seconds per step over the window
    tokens_per_s: float
    window: tuple[int, int]  # first and last step read (1-based, inclusive)


def steady_rate(
    step_seconds: Sequence[float], step_tokens: Sequence[float], window: tuple[int, int]
) -> SteadyRate:
    """Seconds per step (median) and tokens/s over the steps of `window` (1-based, inclusive): tokens per
    step are averaged over the same steps, so the rate and the step time describe the same steps.

    A record that kept only its median step time and its total tokens passes one-element sequences:
    `[step_s]` and `[tokens / steps_done]` (the mean tokens per step over the whole run)."""
    first, last = window
    if len(step_seconds) > 1:
        step_seconds = step_seconds[first - 1 : last]
    if len(step_tokens) > 1:
        step_tokens = step_tokens[first - 1 : last]
    if not step_seconds or not step_tokens or min(step_seconds) <= 0:
        raise ValueError(f"need positive step times and tokens in steps {first}–{last}")
    ordered = sorted(step_seconds)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    tokens_per_step = sum(step_tokens) / len(step_tokens)
    return SteadyRate(median, tokens_per_step / median, window)


def hardware_flops(n_params: int, n_trainable: int, tokens: float, gradient_checkpointing: bool) -> float:
    """FLOPs the hardware performs: model FLOPs plus the recomputed forward under checkpointing."""
    recompute = 2.0 * n_params * tokens if gradient_checkpointing else 0.0
    return training_flops(n_params, n_trainable, tokens, gradient_checkpointing) + recompute


def mfu(flops_per_s: float, gpu_name: str, n_gpus: int) -> float | None:
    """Achieved model FLOP/s over the summed peak of `n_gpus` GPUs, 0..1; None for an unknown GPU."""
    peak = find_peak(gpu_name)
    if peak is None or n_gpus < 1:
        return None
    return flops_per_s / (peak.bf16_dense_tflops * 1e12 * n_gpus)


def model_flops_utilisation(trained: TrainOutcome, runtime: Runtime, setup: SetupConfig) -> float | None:
    """A run's MFU against its GPUs' bf16 dense peak (None on CPU or an unknown GPU)."""
    if runtime.device != "cuda" or not trained.tokens or not trained.train_s:
        return None
    import torch

    flops = training_flops(
        trained.total_params, trained.trainable_params, trained.tokens, setup.recipe.gradient_checkpointing
    )
    value = mfu(flops / trained.train_s, torch.cuda.get_device_name(0), setup.world_size)
    return round(value, 4) if value is not None else None
