"""The runtime a run resolved: device, precision and attention (a setup may say `auto`), and the dtype.

Validation stays pure (`harness.config`); this step looks at the host, never at a timing taken now: on a
GPU bf16 + SDPA; on a CPU with bf16 in hardware (AMX or AVX512-BF16) bf16 + eager attention, which
measured faster there; elsewhere fp32 + SDPA. Each choice keeps its reason, and the record keeps both.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch

from harness.autorecipe import auto_compile, auto_kernels
from harness.config import SetupConfig
from harness.cpuinfo import bf16_flag, cpu_flags, read_cpuinfo

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}

# Where the CPU figures behind `auto` were measured (bench_step.py, variants side by side).
CPU_EVIDENCE = "reports/benchmarks/cpu/bench_step_defaults.txt"


@dataclass(frozen=True)
class Runtime:
    """The resolved device, precision and attention; `reasons` says why for each setting left to auto."""

    device: str
    precision: str
    attention: str = "sdpa"
    reasons: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def dtype(self) -> torch.dtype:
        # 4-bit keeps its compute (and the adapter) in bf16.
        return DTYPES.get(self.precision, torch.bfloat16)


def resolve_runtime(
    device: str,
    precision: str,
    attention: str = "sdpa",
    *,
    cpuinfo: str | None = None,
) -> Runtime:
    """Settings as the setup gives them (`auto` allowed) → the runtime. `cpuinfo`: /proc/cpuinfo's text
    (read here when not given; tests pass recorded text)."""
    reasons: dict[str, str] = {}
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
        reasons["device"] = "a GPU is visible" if device == "cuda" else "no GPU is visible"
    bf16_in_hardware = bf16_flag(cpu_flags(read_cpuinfo() if cpuinfo is None else cpuinfo))
    if precision == "auto":
        precision, reasons["precision"] = _auto_precision(device, bf16_in_hardware)
    if attention == "auto":
        attention, reasons["attention"] = _auto_attention(device, precision)
    return Runtime(device, precision, attention, reasons)


def resolve_setup_runtime(setup: SetupConfig, *, cpuinfo: str | None = None) -> Runtime:
    """Every setting of `setup` that resolves per host (the reasons of recipe.compile and recipe.kernels too;
    they are resolved where the steps run: graphed_layers.compile_mode, hf.fused_kernels)."""
    runtime = resolve_runtime(setup.device, setup.precision, setup.model.attention, cpuinfo=cpuinfo)
    nvidia = torch.version.hip is None
    reasons, mode = dict(runtime.reasons), setup.recipe.compile
    if mode == "auto":
        mode, reasons["compile"] = auto_compile(setup, runtime.device, runtime.precision, nvidia=nvidia)
    if setup.recipe.kernels == "auto":
        reasons["kernels"] = auto_kernels(setup, runtime.device, mode, nvidia=nvidia)[1]
    return replace(runtime, reasons=reasons)


def _auto_precision(device: str, bf16_in_hardware: str | None) -> tuple[str, str]:
    if device == "cuda":
        return "bf16", "a GPU trains in bf16"
    if bf16_in_hardware:
        return (
            "bf16",
            f"the CPU has {bf16_in_hardware} (bf16 matmuls in hardware): faster than fp32 ({CPU_EVIDENCE})",
        )
    return (
        "fp32",
        "the CPU has neither amx_bf16 nor avx512_bf16: bf16 would run without hardware support, fp32 kept",
    )


def _auto_attention(device: str, precision: str) -> tuple[str, str]:
    if device == "cpu" and precision == "bf16":
        return "eager", f"bf16 on a CPU: eager attention's backward beat SDPA's CPU kernel ({CPU_EVIDENCE})"
    return "sdpa", "transformers' default (SDPA)"


def runtime_of(model: torch.nn.Module) -> Runtime:
    """The runtime a loaded model is in, read from its first parameter and its config."""
    param = next(model.parameters())
    precision = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}.get(
        param.dtype, "fp32"
    )
    attention = getattr(getattr(model, "config", None), "_attn_implementation", None) or "sdpa"
    return Runtime(param.device.type, precision, attention)
