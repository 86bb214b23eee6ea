"""Memory available now. Unified-memory APUs freeze the desktop instead of failing with OOM."""

from __future__ import annotations

import psutil

from harness.guard.config import GuardConfig
from harness.guard.verdict import Reading, format_bytes


def memory_reading(config: GuardConfig) -> Reading:
    vm = psutil.virtual_memory()
    limit = max(config.memory_min_available_bytes, config.memory_min_available_fraction * vm.total)
    ok = vm.available >= limit
    detail = f"{format_bytes(vm.available)} memory available of {format_bytes(vm.total)}"
    if not ok:
        detail += f" (need {format_bytes(limit)}) — another job holding memory?"
    return Reading("memory_available", float(vm.available), "B", float(limit), ok, detail)
