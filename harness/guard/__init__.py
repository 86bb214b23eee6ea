"""The quiet-machine guard: refuse to time a busy machine, and mark a timing invalid when noise
starts mid-run. Readings come from small collectors (network, partial downloads, CPU of other
processes, memory, GPU), each skipping quietly what the host cannot tell."""

from harness.guard.config import ALL_CHECKS, GuardConfig, load_guard_config
from harness.guard.lock import offline_env, timed_lock
from harness.guard.readings import Precheck, precheck
from harness.guard.sampler import NoisySample, Sampler, SamplerReport
from harness.guard.verdict import GuardRecord, GuardVerdict, Reading

__all__ = [
    "ALL_CHECKS",
    "GuardConfig",
    "GuardRecord",
    "GuardVerdict",
    "NoisySample",
    "Precheck",
    "Reading",
    "Sampler",
    "SamplerReport",
    "load_guard_config",
    "offline_env",
    "precheck",
    "timed_lock",
]
