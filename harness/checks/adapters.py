"""Dead adapters: LoRA modules whose B never received a gradient or never moved.

LoRA's B starts at zero, and A gets no gradient until B moves: B is the one to watch. A module that never
runs in forward (an unused projection, a vision tower never fed an image) keeps B at zero and trains
nothing: in the story, 36 of them, silently. The dead ones are named with the target setting that would
leave them out. Under DDP the flags are all-reduced (max) across ranks; only one process is tested.
"""

from __future__ import annotations

import re
from typing import Any

import torch
from torch import nn

from harness.json_types import JsonObject
from harness.results import CheckVerdict

# Prefixes that wrappers put in front of the base model's module names (DDP, PEFT): PEFT matches
# `target_modules` against names without them.
WRAPPER_PREFIXES = ("module.", "base_model.model.")
MAX_NAMED = 12


def base_name(name: str) -> str:
    changed = True
    while changed:
        changed = False
        for prefix in WRAPPER_PREFIXES:
            if name.startswith(prefix):
                name, changed = name[len(prefix) :], True
    return name


def lora_parameters(model: nn.Module) -> dict[str, tuple[nn.Parameter, nn.Parameter]]:
    """Module name (as PEFT's targets see it, one entry per adapter) → (A weight, B weight)."""
    found: dict[str, tuple[nn.Parameter, nn.Parameter]] = {}
    for name, module in model.named_modules():
        lora_a, lora_b = getattr(module, "lora_A", None), getattr(module, "lora_B", None)
        if not isinstance(lora_a, nn.ModuleDict) or not isinstance(lora_b, nn.ModuleDict):
            continue
        for adapter in lora_b:
            key = base_name(name) if len(lora_b) == 1 else f"{base_name(name)}[{adapter}]"
            found[key] = (lora_a[adapter].weight, lora_b[adapter].weight)
    return found


def _suffix(name: str) -> str:
    return name.rsplit(".", 1)[-1].split("[", 1)[0]


def suggest_targets(dead: list[str], alive: list[str]) -> list[str] | str:
    """A target setting that keeps every live module and drops the dead: a suffix list when whole suffixes are
    dead, else a regex (PEFT full-matches a string target against the module name)."""
    live_suffixes = sorted({_suffix(n) for n in alive})
    if not {_suffix(n) for n in dead} & set(live_suffixes):
        return live_suffixes
    excluded = "|".join(re.escape(n) for n in sorted(dead))
    return rf"^(?!(?:{excluded})$).*\.(?:{'|'.join(map(re.escape, live_suffixes))})$"


class DeadAdapterTracker:
    """Create after LoRA wraps the model, before training; call `observe_grads()` after each backward
    (`callback()` does it from the Trainer), then `verdict(model)` after training."""

    def __init__(self, model: nn.Module) -> None:
        self.params = lora_parameters(model)
        self.names = list(self.params)
        self.initial = {
            name: (a.detach().clone(), b.detach().clone()) for name, (a, b) in self.params.items()
        }
        device = next(model.parameters()).device
        # Flags live on the device and are OR-ed there: no host sync per step.
        self.got_grad = torch.zeros(len(self.names), dtype=torch.bool, device=device)
        self.observations = 0

    def observe_grads(self) -> None:
        # One fused reduction over the B gradients present (a few ops, not three per module: SmolLM2's
        # 210 modules made 630 per step); a module without a gradient tensor got none. A gradient with a
        # NaN counts as received (NaN != 0).
        bs = [b for _, b in self.params.values()]
        present = [i for i, b in enumerate(bs) if b.grad is not None]
        if present:
            norms = torch._foreach_norm([bs[i].grad.detach() for i in present], ord=float("inf"))
            flags = torch.stack([n.to(self.got_grad.device) for n in norms]).ne(0)
            where = (
                slice(None) if len(present) == len(self.names) else torch.tensor(present, device=flags.device)
            )
            self.got_grad[where] |= flags
        self.observations += 1

    def callback(self) -> Any:
        from transformers import TrainerCallback

        tracker = self

        class ObserveAdapterGrads(TrainerCallback):
            # Called after the last backward of a step (all accumulation micro-steps in) and before the
            # optimizer zeroes the gradients.
            def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                tracker.observe_grads()

        return ObserveAdapterGrads()

    def _moved(self) -> torch.Tensor:
        moved = [
            (b.detach() != self.initial[name][1].to(b.device)).any().to(self.got_grad.device)
            for name, (_, b) in self.params.items()
        ]
        return torch.stack(moved) if moved else torch.zeros(0, dtype=torch.bool, device=self.got_grad.device)

    def verdict(self, model: nn.Module | None = None) -> CheckVerdict:
        """`model` is accepted for symmetry with the recipe; the tracked parameters are the model's own tensors."""
        if not self.names:
            return CheckVerdict("skipped", "no LoRA modules found in the model")
        got_grad, moved = self.got_grad.clone(), self._moved()
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            # A module may run on one rank's batch and not another's: alive if alive anywhere.
            stacked = torch.stack([got_grad, moved]).to(torch.uint8)
            torch.distributed.all_reduce(stacked, op=torch.distributed.ReduceOp.MAX)
            got_grad, moved = stacked[0].bool(), stacked[1].bool()
        watched_grads = self.observations > 0
        alive_flags = (got_grad & moved) if watched_grads else moved
        alive = [n for n, ok in zip(self.names, alive_flags.tolist(), strict=True) if ok]
        dead = [n for n, ok in zip(self.names, alive_flags.tolist(), strict=True) if not ok]
        no_grad = (
            [n for n, ok in zip(self.names, got_grad.tolist(), strict=True) if not ok]
            if watched_grads
            else []
        )
        evidence: JsonObject = {
            "n_modules": len(self.names),
            "n_dead": len(dead),
            "steps_observed": self.observations,
            "dead": dead,
            "never_got_grad": no_grad,
        }
        if not dead:
            how = (
                f"over {self.observations} steps"
                if watched_grads
                else "(gradients not observed; by movement)"
            )
            return CheckVerdict(
                "pass", f"all {len(self.names)} LoRA modules got gradients and moved {how}", evidence
            )
        evidence["suggested_targets"] = suggest_targets(dead, alive) if alive else None
        shown = ", ".join(dead[:MAX_NAMED]) + (
            f" … (+{len(dead) - MAX_NAMED})" if len(dead) > MAX_NAMED else ""
        )
        detail = f"{len(dead)} of {len(self.names)} LoRA modules never learned ({shown})"
        if alive:
            detail += f"; to exclude them set lora.targets = {evidence['suggested_targets']!r}"
        return CheckVerdict("fail", detail, evidence)
