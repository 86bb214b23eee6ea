"""What `recipe.compile = "auto"` runs as on a device, and why: the one rule, for the trainer (which runs it)
and for the fingerprint (which must tell a record of one meaning from another). No torch here: the parent
decides from the setup and the host's kind before any trainer starts.

- one NVIDIA GPU: "graphs" unless the setup rules them out (SetupConfig.graph_conflicts); ROCm's graphs are
  not measured yet.
- a CPU training in bf16 (AMX or AVX512-BF16), backend hf, with a C++ compiler for inductor's CPU kernels:
  "layers" (300 steps 1.42-1.52x faster than eager on the 2-core Xeon with AMX, exact match not lower on
  any of three seeds: reports/benchmarks/cpu/compile-layers-2026-12-03-xeon/).
- elsewhere "none" (fp32 CPUs: not measured).
"""

from __future__ import annotations

import os
import shutil

from harness.config import SetupConfig
from harness.cpuinfo import BF16_TIERS, bf16_flag, cpu_flags, read_cpuinfo

GRAPHS_EVIDENCE = "reports/benchmarks/h200/step_profile.txt"
LAYERS_EVIDENCE = "reports/benchmarks/cpu/compile-layers-2026-12-03-xeon/"


def cxx_compiler() -> str | None:
    """The C++ compiler torch.compile's CPU backend would call ($CXX, else g++), or None where there is none."""
    return shutil.which(os.environ.get("CXX") or "g++")


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
    if cxx_compiler() is None:
        return "none", "no C++ compiler ($CXX or g++) for torch.compile's CPU kernels: eager"
    return "layers", f"a CPU training in bf16: compiled decoder layers stepped faster ({LAYERS_EVIDENCE})"


def fingerprint_context(setup: SetupConfig, host_kind: str) -> list[str]:
    """What a run's fingerprint adds for "auto" on this host kind: the CPU's compiled layers (since a171ae8), so
    a record of the eager meaning no longer stands in; nothing where "auto" means what it meant before."""
    if setup.recipe.compile != "auto" or setup.device == "cuda":
        return []
    on_cpu = setup.device == "cpu" or host_kind.startswith("cpu-")
    if not on_cpu:
        return []
    precision = setup.precision
    if precision == "auto":
        tier = host_kind.rsplit("-", 1)[-1] if host_kind.startswith("cpu-") else None
        bf16 = tier in BF16_TIERS if tier else bf16_flag(cpu_flags(read_cpuinfo())) is not None
        precision = "bf16" if bf16 else "fp32"
    mode, _ = auto_compile(setup, "cpu", precision)
    return [f"recipe.compile auto={mode}"] if mode != "none" else []
