"""What the CPU can do, read from `/proc/cpuinfo` text: model name, flags, and the instruction tier that
decides how fast bf16 runs. `read_cpuinfo()` is the only reader; $LORABENCH_CPUINFO_FILE names a recorded
text instead, so a test drives a run down another CPU's path (for tests only: the record then describes
that CPU). Not covered: non-Linux hosts and ARM feature names (tier "base"; auto settings stay fp32).
"""

from __future__ import annotations

import os
from pathlib import Path

from harness import settings

CPUINFO = Path("/proc/cpuinfo")

# bf16 matmuls in hardware: AMX tiles (Sapphire Rapids and later) or AVX512-BF16 dot products (Cooper
# Lake, Zen 4). Without either, torch emulates bf16 on CPU and fp32 is faster.
BF16_FLAGS = ("amx_bf16", "avx512_bf16")
# The tier names, best first, each with the flag that marks it: what oneDNN dispatches on.
TIERS = (("amx", "amx_bf16"), ("avx512bf16", "avx512_bf16"), ("avx512", "avx512f"), ("avx2", "avx2"))
# The tiers with bf16 matmuls in hardware (a host kind names its tier: harness.provenance.host_kind).
BF16_TIERS = tuple(tier for tier, flag in TIERS if flag in BF16_FLAGS)


def usable_cores() -> int:
    """The cores this process may run on (its affinity), or every core where there is no affinity call (macOS)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def cores_each(workers: int, cores: int | None = None) -> int:
    """One worker's share of the cores (at least one) where `workers` processes compute side by side."""
    return max(1, (cores or usable_cores()) // workers)


def read_cpuinfo() -> str:
    """/proc/cpuinfo's text (or $LORABENCH_CPUINFO_FILE's), or "" where there is none (the tier is then "base")."""
    try:
        return (settings.CPUINFO_FILE.get() or CPUINFO).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _first_field(text: str, name: str) -> str | None:
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == name:
            return value.strip()
    return None


def model_name(text: str) -> str | None:
    return _first_field(text, "model name")


def cpu_flags(text: str) -> frozenset[str]:
    """The first processor's flags (x86 `flags`; ARM's `Features` line is read the same way)."""
    line = _first_field(text, "flags") or _first_field(text, "Features") or ""
    return frozenset(line.split())


def bf16_flag(flags: frozenset[str]) -> str | None:
    """The flag that gives this CPU bf16 matmuls in hardware, best first; None when it has none."""
    return next((flag for flag in BF16_FLAGS if flag in flags), None)


def isa_tier(flags: frozenset[str]) -> str:
    """amx, avx512bf16, avx512, avx2 or base: the best instruction tier the kernels can use."""
    return next((tier for tier, flag in TIERS if flag in flags), "base")
