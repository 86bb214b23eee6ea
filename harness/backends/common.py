"""What every backend shares: the observers it must call each step and the outcome it returns."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from harness.results import CheckVerdict

if TYPE_CHECKING:
    from peft import PeftModel
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

# The model a backend hands the recipe: transformers' before LoRA, PEFT's after (names only: importing
# this module loads neither).
Model: TypeAlias = "PreTrainedModel | PeftModel"
Tokenizer: TypeAlias = "PreTrainedTokenizerBase"


class StepObserver(Protocol):
    """Called by the backend after every optimizer step with the raw (unfiltered) loss and the gradient
    norm before clipping (None where the backend does not log one); a returned string stops training
    with that reason."""

    def on_step(self, step: int, loss: float, grad_norm: float | None = None) -> str | None: ...


@dataclass
class TrainOutcome:
    model: Model
    losses: list[float] = field(default_factory=list)  # raw, one per logged step: NaN/inf included
    stopped_reason: str | None = None
    train_s: float = 0.0
    preflight_s: float | None = None
    step_ends: list[float] = field(
        default_factory=list
    )  # perf_counter at the start, then after each optimizer step
    tokens: int | None = None
    samples: int = 0
    trainable_params: int = 0
    total_params: int = 0
    checks: dict[str, CheckVerdict] = field(default_factory=dict)  # from preflight and post checks, by name
    compile: str = "none"  # recipe.compile as the steps ran ("auto" resolved)
    graphs: Any = None  # GraphStats (harness/backends/graphed_layers.py) of a recipe.compile = "graphs" span
    # Wall seconds of the backend's own spans, in order (lora, trainer, preflight, graph_capture, steps,
    # after_steps): the record's phases (harness/run/timeline.py).
    phases: dict[str, float] = field(default_factory=dict)
    kernels: list[str] | None = (
        None  # recipe.kernels: the fused kernels that ran (e.g. Liger's), None for none
    )


def steady_step_seconds(step_ends: Sequence[float]) -> float | None:
    """Median seconds per optimizer step, leaving out the first tenth of the steps (at least one): the
    warm-up (allocator, cuBLAS handles, a compile) that a longer run would amortise. The logged loss is
    read from the device every step, so the host's clock follows the GPU's."""
    durations = [b - a for a, b in itertools.pairwise(step_ends)]
    steady = durations[max(1, len(durations) // 10) :]
    return round(statistics.median(steady), 4) if steady else None


def silence_library_progress() -> None:
    """Quiet runs (`--quiet`, and every rank but the first): the libraries' own progress bars off, so the
    console has lorabench's phase lines only (transformers' "Loading weights", TRL's dataset passes through
    datasets' map, the hub's downloads). Their warnings still print."""
    from datasets.utils.logging import disable_progress_bar as datasets_bars_off
    from huggingface_hub.utils import disable_progress_bars as hub_bars_off
    from transformers.utils.logging import disable_progress_bar as transformers_bars_off

    datasets_bars_off()
    hub_bars_off()
    transformers_bars_off()


def count_params(model: Any) -> tuple[int, int]:
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    return trainable, total
