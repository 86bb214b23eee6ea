"""Where the 4B packed LoRA step spends its GPU time, and what the adapters cost on top of the frozen base.

The shape of benchmarks/setups/exp_c_speed_packed.toml (Qwen3-4B, random weights, LoRA r16 on every linear
layer, 8 rows × 2048 tokens, bf16) with its kernels as "auto" resolves them on the GPU (Liger's where
installed). Random token ids: the step's cost does not depend on the data. One process, a plain loop per
variant (autocast bf16 forward with labels, backward, fused AdamW over what trains), ms per step side by side:

  base        the frozen model without adapters, its input embeddings requiring grad: the backward through
              every layer that any LoRA step pays (the floor the adapters add to)
  lora        the adapters as a run trains them (PEFT with harness.backends.lean_lora's forward)
  lora-addmm  the same, the adapter's update added into the base's output by one in-place addmm
  lora-fused  one autograd function: the update added in the base matmul's epilogue (addmm's C), forward and
              backward (the input's gradient likewise), then one loss of each forward on the same weights

then torch.profiler over three `lora` steps: CUDA time by kernel family and the top kernels.

Usage (on the GPU machine, LORABENCH_CACHE holding qwen3-4b-random): python dev/gpu/profile_lora_step.py
"""

from __future__ import annotations

import argparse
import collections
import itertools
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from harness.backends import hf
from harness.backends.lean_lora import lean_layers, lean_lora_forward
from harness.config import load_setup
from harness.models import resolve_model
from harness.runtime import Runtime

SETUP = Path("benchmarks/setups/exp_c_speed_packed.toml")
FAMILIES = (
    ("matmul", ("gemm", "cutlass", "xmma", "nvjet", "cublas")),
    ("attention", ("flash", "fmha", "attention")),
    ("elementwise", ("elementwise", "vectorized", "unrolled")),
    ("liger/triton", ("triton", "liger", "_kernel")),
    ("reduce", ("reduce",)),
    ("copy/cast", ("copy", "cast", "memcpy", "memset", "fill")),
)


def family(name: str) -> str:
    low = name.lower()
    return next((fam for fam, keys in FAMILIES if any(k in low for k in keys)), "other")


def step_fn(model: Any, batch: torch.Tensor) -> Callable[[], float]:
    trained = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=2e-4, fused=True) if trained else None

    def step() -> float:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=batch, labels=batch, use_cache=False).loss
        loss.backward()
        if optimizer is not None:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return loss

    return step


def timed(name: str, step: Callable[[], Any], steps: int) -> float:
    ends = []
    for _ in range(steps):
        step()
        torch.cuda.synchronize()
        ends.append(time.perf_counter())
    per_step = statistics.median(b - a for a, b in itertools.pairwise(ends[2:]))
    print(f"{name:12s} {1000 * per_step:7.1f} ms/step (median of {steps - 3}, two warm-up steps left out)")
    return per_step


def addmm_forward(layer: Any, adapter: str) -> Callable[..., torch.Tensor]:
    """The lean forward with the update added by one in-place addmm into the base's output (scaling 1.0)."""
    lora_a, lora_b = layer.lora_A[adapter], layer.lora_B[adapter]

    def forward(x: torch.Tensor) -> torch.Tensor:
        result = layer.base_layer(x)
        low = lora_a(x)
        flat = result.view(-1, result.shape[-1])
        flat.addmm_(low.view(-1, low.shape[-1]).to(result.dtype), lora_b.weight.t().to(result.dtype))
        return result

    return forward


class FusedLora(torch.autograd.Function):
    """base(x) + B(A(x)) with the update added in the base matmul's epilogue (addmm's C), forward and backward:
    three passes over the output (and the input's gradient) instead of five. Scaling 1.0, no bias."""

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, weight: torch.Tensor, a: torch.Tensor, b: torch.Tensor
    ) -> torch.Tensor:
        a16, b16 = a.to(x.dtype), b.to(x.dtype)
        flat = x.reshape(-1, x.shape[-1])
        low = flat @ a16.t()
        out = torch.addmm(low @ b16.t(), flat, weight.t())
        ctx.save_for_backward(flat, low, weight, a16, b16)
        ctx.dtypes = (a.dtype, b.dtype)
        return out.view(*x.shape[:-1], -1)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        flat, low, weight, a16, b16 = ctx.saved_tensors
        g = grad.reshape(-1, grad.shape[-1])
        g_low = g @ b16
        grad_x = torch.addmm(g_low @ a16, g, weight)
        grad_a, grad_b = (g_low.t() @ flat).to(ctx.dtypes[0]), (g.t() @ low).to(ctx.dtypes[1])
        return grad_x.view(*grad.shape[:-1], -1), None, grad_a, grad_b


def fused_forward(layer: Any, adapter: str) -> Callable[..., torch.Tensor]:
    lora_a, lora_b, base = layer.lora_A[adapter], layer.lora_B[adapter], layer.base_layer

    def forward(x: torch.Tensor) -> torch.Tensor:
        return FusedLora.apply(x.to(base.weight.dtype), base.weight, lora_a.weight, lora_b.weight)

    return forward


def profiled(step: Callable[[], Any]) -> None:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            step()
        torch.cuda.synchronize()
    kernels = [e for e in prof.key_averages() if e.device_type.name == "CUDA"]
    total = sum(e.self_device_time_total for e in kernels) / 3 / 1000
    by_family: dict[str, float] = collections.Counter()
    for e in kernels:
        by_family[family(e.key)] += e.self_device_time_total / 3 / 1000
    print(f"\nCUDA time a step (lora): {total:.1f} ms")
    for fam, ms in sorted(by_family.items(), key=lambda kv: -kv[1]):
        print(f"  {fam:14s} {ms:7.1f} ms  {100 * ms / total:5.1f}%")
    print("top kernels (ms a step, calls a step, name):")
    for e in sorted(kernels, key=lambda e: -e.self_device_time_total)[:25]:
        print(f"  {e.self_device_time_total / 3000:7.2f}  {e.count // 3:5d}  {e.key[:110]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    setup = load_setup(SETUP, [])
    runtime = Runtime("cuda", "bf16")
    model, _ = hf.load(setup, resolve_model(setup.model).path, runtime)
    print("kernels:", hf.fused_kernels(model, setup, runtime))
    model.config.use_cache = False
    model.train()
    batch = torch.randint(0, model.config.vocab_size, (setup.recipe.batch_size, setup.recipe.max_length))
    batch = batch.cuda()
    model.enable_input_require_grads()
    for p in model.parameters():
        p.requires_grad_(False)
    base = timed("base", step_fn(model, batch), args.steps)
    model = hf.wrap_lora(model, setup)
    step = step_fn(model, batch)
    with lean_lora_forward(model) as count:
        lora = timed("lora", step, args.steps)
        print(f"  ({count} lean LoRA layers; adapters cost {1000 * (lora - base):.1f} ms a step)")
        profiled(step)
    layers = lean_layers(model)
    assert all(layer.scaling[adapter] == 1 and layer.base_layer.bias is None for layer, adapter in layers)
    for layer, adapter in layers:
        vars(layer)["forward"] = addmm_forward(layer, adapter)
    timed("lora-addmm", step, args.steps)
    for layer, adapter in layers:
        vars(layer)["forward"] = fused_forward(layer, adapter)
    timed("lora-fused", step, args.steps)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        fused = model(input_ids=batch, labels=batch, use_cache=False).loss.item()
    for layer, _ in layers:
        vars(layer).pop("forward")
    with lean_lora_forward(model), torch.autocast("cuda", dtype=torch.bfloat16):
        lean = model(input_ids=batch, labels=batch, use_cache=False).loss.item()
    print(f"loss after the steps, same weights: lean {lean:.5f}, fused {fused:.5f}")


if __name__ == "__main__":
    main()
