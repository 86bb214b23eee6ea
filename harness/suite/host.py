"""What this host can run, asked once per session, so a case it cannot run skips naming what is missing.

Answers come from `harness.gpu.facts` (torch, whose cuda API also answers for ROCm) and `importlib.util.find_spec`, never
from importing the optional packages themselves: importing unsloth or bitsandbytes can take seconds
or touch the GPU, and a skip decision must not.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from harness.config import SetupConfig
from harness.gpu.facts import visible_gpu_count


@dataclass(frozen=True)
class HostCapabilities:
    gpu_count: int
    packages: frozenset[str]  # optional packages that are importable here
    backends: frozenset[str]  # harness backends present in this lorabench

    def missing_gpus(self, needed: int) -> str | None:
        if self.gpu_count >= needed:
            return None
        what = "a GPU" if needed == 1 else f"{needed} GPUs"
        return f"needs {what}; this host has torch.cuda.device_count() == {self.gpu_count}"


OPTIONAL_PACKAGES = ("bitsandbytes", "unsloth")
KNOWN_BACKENDS = ("hf", "unsloth")


def detect_capabilities() -> HostCapabilities:
    gpus = visible_gpu_count()
    packages = frozenset(name for name in OPTIONAL_PACKAGES if _importable(name))
    backends = frozenset(name for name in KNOWN_BACKENDS if _importable(f"harness.backends.{name}"))
    return HostCapabilities(gpu_count=gpus, packages=packages, backends=backends)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a half-installed module
        return False


def missing_for_setup(setup: SetupConfig, host: HostCapabilities) -> list[str]:
    """Every reason this host cannot run `setup`, one sentence each (empty: it can)."""
    reasons: list[str] = []
    if setup.backend not in host.backends:
        reasons.append(
            f"backend {setup.backend!r}: harness.backends.{setup.backend} is not in this lorabench yet"
        )
    if setup.backend == "unsloth" and "unsloth" not in host.packages:
        reasons.append("backend 'unsloth' needs the unsloth package (not importable here)")
    if setup.precision == "4bit" and "bitsandbytes" not in host.packages:
        reasons.append("precision '4bit' needs the bitsandbytes package (not importable here)")
    needs_gpu = setup.device == "cuda" or setup.precision == "4bit" or setup.backend == "unsloth"
    gpu_reason = host.missing_gpus(1) if needs_gpu else None
    if gpu_reason:
        reasons.append(f"{_gpu_cause(setup)} {gpu_reason}")
    return reasons


def _gpu_cause(setup: SetupConfig) -> str:
    if setup.device == "cuda":
        return "device 'cuda'"
    return "precision '4bit'" if setup.precision == "4bit" else f"backend {setup.backend!r}"
