"""What the recipe's "auto" switches run as on a device, and why: `recipe.compile` and `recipe.kernels`, one
rule each, for the trainer (which runs it) and for the fingerprint (which must tell a record of one meaning
from another). No torch here: the parent decides from the setup and the host's kind before any trainer starts.

recipe.compile = "auto":
- one NVIDIA GPU: "graphs" unless the setup rules them out (SetupConfig.graph_conflicts); ROCm's graphs are
  not measured yet.
- a CPU training in bf16 (AMX or AVX512-BF16), backend hf, for 100 steps or more (the compile pays back after
  45-55), with a C++ compiler and Python's headers for inductor's CPU kernels:
  "layers" (300 steps 1.42-1.52x faster than eager on the 2-core Xeon with AMX, exact match not lower on
  any of three seeds: reports/benchmarks/cpu/compile-layers-2026-12-03-xeon/).
- elsewhere "none" (fp32 CPUs: not measured).

recipe.kernels = "auto": Liger's kernels where the layers run eager on an NVIDIA GPU (backend hf, bf16,
liger-kernel installed): the 4B packed step 1.48x faster, its loss within 0.0015 over 20 steps. On every card of
a DDP run alike (the kernels are each process's own; two cards not measured), so one card's and two cards'
speed setups run the same kernels. Not under graphed layers (SmolLM2's launch-bound step was slower with them)
or compiled ones (dynamo cannot trace Liger's functions), not on ROCm (not measured), and not where the model
type has no Liger kernels (the trainer finds that; the record's train.kernels says what ran).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import sysconfig
from pathlib import Path

from harness.config import SetupConfig
from harness.cpuinfo import BF16_TIERS, bf16_flag, cpu_flags, read_cpuinfo

GRAPHS_EVIDENCE = "reports/benchmarks/h200/step_profile.txt"
LAYERS_EVIDENCE = "reports/benchmarks/cpu/compile-layers-2026-12-03-xeon/"
# A cold compile of the layers took ~34 s on the 2-core Xeon (a 10-step smoke run 65.2 s against 31.2 s eager)
# and a compiled step saves 0.64-0.75 s there (300 steps 427-458 s against 651 s): it pays back after 45-55
# steps, so shorter runs (smoke runs, CI's) stay eager, with a margin.
COMPILE_PAYS_AFTER = 100
LAYERS_PAYBACK = "docs/measurements.md, compiled layers' payback"
LIGER_EVIDENCE = "reports/benchmarks/h200/2026-12-04-liger-auto.txt"
LIGER_SLOWER = "reports/benchmarks/h200/2026-12-03-suite-placement.txt"


def cxx_compiler() -> str | None:
    """The C++ compiler torch.compile's CPU backend would call ($CXX, else g++), or None where there is none."""
    return shutil.which(os.environ.get("CXX") or "g++")


def python_headers() -> bool:
    """Whether this interpreter's Python.h is there: inductor's CPU kernels include it, so a compiler alone
    fails at the first step (Debian's python3 without python3-dev)."""
    return (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file()


def auto_compile(setup: SetupConfig, device: str, precision: str, *, nvidia: bool = True) -> tuple[str, str]:
    """recipe.compile = "auto" on this device and precision: the mode and the reason the record keeps."""
    if device == "cuda":
        if not nvidia:
            return "none", "ROCm: graphed layers not measured yet"
        if conflicts := setup.graph_conflicts():
            name, value, _ = conflicts[0]
            return "none", f"graphed layers cannot run with {name} = {value!r}"
        return "graphs", f"one NVIDIA GPU: decoder layers replayed from CUDA graphs ({GRAPHS_EVIDENCE})"
    if setup.backend != "hf" or precision != "bf16":
        return "none", "a CPU not training in bf16 with backend hf: compiled layers not measured there"
    if setup.recipe.steps < COMPILE_PAYS_AFTER:
        return "none", (
            f"{setup.recipe.steps} steps: compiling the layers costs more than it saves below "
            f"{COMPILE_PAYS_AFTER} ({LAYERS_PAYBACK})"
        )
    if cxx_compiler() is None:
        return "none", "no C++ compiler ($CXX or g++) for torch.compile's CPU kernels: eager"
    if not python_headers():
        return "none", "no Python.h (python3-dev) for torch.compile's CPU kernels: eager"
    return "layers", f"a CPU training in bf16: compiled decoder layers stepped faster ({LAYERS_EVIDENCE})"


@functools.cache
def liger_installed() -> bool:
    """Whether liger-kernel is importable: looked up once a process (every fingerprint of a suite asks)."""
    return importlib.util.find_spec("liger_kernel") is not None


def auto_kernels(
    setup: SetupConfig, device: str, compile_mode: str, *, nvidia: bool = True, installed: bool | None = None
) -> tuple[str, str]:
    """recipe.kernels = "auto" on this device, with the layers run in `compile_mode`: the kernels and the reason
    the record keeps. `installed`: whether liger-kernel imports (looked up when not given)."""
    if device != "cuda":
        return "none", "Liger's kernels are Triton: GPU only"
    if not nvidia:
        return "none", "ROCm: Liger's kernels not measured yet"
    if setup.backend != "hf" or setup.precision not in ("auto", "bf16"):
        return "none", "Liger's kernels are measured with backend hf in bf16 only"
    if compile_mode != "none":
        return "none", f"{compile_mode} layers: Liger's kernels not faster there ({LIGER_SLOWER})"
    if not (liger_installed() if installed is None else installed):
        return "none", "liger-kernel is not installed (pip install liger-kernel): the model's own modules"
    return "liger", f"eager layers on an NVIDIA GPU: Liger's kernels stepped 1.48x faster ({LIGER_EVIDENCE})"


def fingerprint_context(setup: SetupConfig, host_kind: str) -> list[str]:
    """What a run's fingerprint adds for an "auto" whose meaning changed on this host kind: the CPU's compiled
    layers (since a171ae8) and Liger's kernels on an NVIDIA GPU, so a record of the old meaning no longer
    stands in; nothing where "auto" means what it meant before."""
    on_cpu = setup.device == "cpu" or (setup.device == "auto" and host_kind.startswith("cpu-"))
    if on_cpu:
        return _cpu_compile_context(setup, host_kind)
    if setup.recipe.kernels != "auto" or not _nvidia_gpu_kind(host_kind):
        return []
    compile_mode = setup.recipe.compile
    if compile_mode == "auto":
        compile_mode, _ = auto_compile(setup, "cuda", "bf16")
    kernels, _ = auto_kernels(setup, "cuda", compile_mode)
    return [f"recipe.kernels auto={kernels}"] if kernels != "none" else []


def _nvidia_gpu_kind(host_kind: str) -> bool:
    """A GPU host kind (its GPU's name) of NVIDIA's: not a CPU's, not AMD's. NVIDIA's older names lack the
    vendor ("Tesla V100", "Quadro RTX 8000"), so AMD's are what is told apart."""
    amd = any(word in host_kind.split("-") for word in ("amd", "radeon", "instinct")) or host_kind.startswith(
        "gfx"
    )
    return not host_kind.startswith("cpu-") and not amd


def _cpu_compile_context(setup: SetupConfig, host_kind: str) -> list[str]:
    if setup.recipe.compile != "auto":
        return []
    precision = setup.precision
    if precision == "auto":
        tier = host_kind.rsplit("-", 1)[-1] if host_kind.startswith("cpu-") else None
        bf16 = tier in BF16_TIERS if tier else bf16_flag(cpu_flags(read_cpuinfo())) is not None
        precision = "bf16" if bf16 else "fp32"
    mode, _ = auto_compile(setup, "cpu", precision)
    return [f"recipe.compile auto={mode}"] if mode != "none" else []
