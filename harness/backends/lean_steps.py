"""The Trainer's per-step walks over the whole model, taken out where their answer cannot change (issue 28).

transformers' Trainer walks the whole model four times a step (`train()`, `num_parameters()`, clipping
and zeroing over all parameters): ~16 ms a step on the 2-core EPYC (reports/benchmarks/cpu/
bench_module_walks.txt); on the H200, 300 steps 19.5-20.8 s -> 11.1-11.6 s
(reports/benchmarks/h200/2026-12-01-simplification.txt). Same math, fewer walks:
- the FLOP counter's parameter count is taken once;
- gradients are clipped and zeroed over the trainable parameters only (a frozen one never holds one);
- `train()` returns at once when the model is in train mode and a full `train()` has walked it in this
  span. Not before: `from_pretrained` + PEFT leave the top flag on and the layers in eval mode (trusting
  the flag from the start once trained a run's layers in eval mode: no dropout, no CUDA graphs).
The patches hold only while the trainer trains (`lean_module_walks`): a copy made for evaluation must
not carry methods bound to this model.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import Any

from torch import nn


class LeanSteps:
    """Mixin for the Trainer subclass (put it first): the FLOP count and the clipping without the walks."""

    lean_steps = True  # tests turn it off for the control run
    _lean_n_params: int | None = None
    _lean_trainable: list[nn.Parameter] | None = None

    # Any values: Trainer's model inputs: tensors and flags by name (transformers' signature).
    def floating_point_ops(self, inputs: dict[str, Any]) -> int:
        model: Any = self.model  # type: ignore[attr-defined]
        main = getattr(model, "main_input_name", "input_ids")
        if not self.lean_steps or main not in inputs or not hasattr(model, "num_parameters"):
            return super().floating_point_ops(inputs)  # type: ignore[misc]
        if self._lean_n_params is None:
            self._lean_n_params = model.num_parameters(exclude_embeddings=True)
        return 6 * inputs[main].numel() * self._lean_n_params

    def _clip_grad_norm(self, model: nn.Module) -> Any:
        from accelerate.utils import DistributedType

        accelerator: Any = self.accelerator  # type: ignore[attr-defined]
        plain = accelerator.distributed_type in (DistributedType.NO, DistributedType.MULTI_GPU)
        if not (self.lean_steps and plain):  # FSDP, DeepSpeed, XLA: their own clipping paths
            return super()._clip_grad_norm(model)  # type: ignore[misc]
        if self._lean_trainable is None:
            self._lean_trainable = [p for p in model.parameters() if p.requires_grad]
        return accelerator.clip_grad_norm_(self._lean_trainable, self.args.max_grad_norm)  # type: ignore[attr-defined]


def _zero_grad(params: list[nn.Parameter]) -> Callable[..., None]:
    def zero_grad(set_to_none: bool = True) -> None:
        # nn.Module.zero_grad's own steps, on the parameters that can hold a gradient.
        for param in params:
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                if param.grad.grad_fn is not None:
                    param.grad.detach_()
                else:
                    param.grad.requires_grad_(False)
                param.grad.zero_()

    return zero_grad


@contextmanager
def lean_module_walks(model: nn.Module, enabled: bool = True) -> Generator[None]:
    """For the span: `model.train()` returns at once when already training; `model.zero_grad()` walks the
    trainable parameters only. Both are instance attributes, removed on the way out."""
    if not enabled:
        yield
        return
    full_train = model.train
    walked = False

    def train(mode: bool = True) -> nn.Module:
        nonlocal walked
        if mode and model.training and walked:
            return model
        walked = True
        return full_train(mode)

    vars(model)["train"] = train  # instance attributes shadow the class's methods
    vars(model)["zero_grad"] = _zero_grad([p for p in model.parameters() if p.requires_grad])
    try:
        yield
    finally:
        vars(model).pop("train", None)
        vars(model).pop("zero_grad", None)
