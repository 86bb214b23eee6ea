"""Thresholds of the quiet-machine guard, validated once at the edge (a `[guard]` section)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.config import read_config_file
from harness.errors import ConfigError

# "view": in a container, whether the guard can see the host at all (harness/guard/hostview.py).
Check = Literal["net", "downloads", "cpu", "memory", "gpu", "view"]
ALL_CHECKS: tuple[Check, ...] = ("net", "downloads", "cpu", "memory", "gpu", "view")


class GuardConfig(BaseModel):
    """What counts as a quiet machine. Defaults suit a desktop with one user and one job."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    checks: tuple[Check, ...] = Field(ALL_CHECKS, description="which readings may refuse a timing")
    window_s: float = Field(3.0, gt=0, le=60, description="pre-check observation window")
    sample_interval_s: float = Field(1.0, gt=0, le=60, description="sampler period during the timed phase")

    # A model download runs at tens of MB/s; ssh, monitoring and NTP stay far below 1 MB/s.
    net_bytes_per_s_limit: float = Field(1_000_000, ge=0, description="per interface, per direction")
    net_interfaces: tuple[str, ...] | None = Field(None, description="watch only these (fnmatch); None = all")
    net_ignore_interfaces: tuple[str, ...] = Field((), description="never watched (fnmatch)")
    # A local mirror or caching proxy serves a download over loopback (hundreds of MB/s), and it is
    # noise all the same; lorabench's own loopback traffic (torch's distributed store, torchrun's
    # rendezvous) stays at KB/s, so loopback is watched with a limit of its own.
    net_loopback_interfaces: tuple[str, ...] = Field(
        ("lo",), description="loopback (fnmatch): the limit below"
    )
    net_loopback_bytes_per_s_limit: float = Field(
        10_000_000, ge=0, description="per loopback interface, per direction"
    )

    # Percent of one core used by processes outside the caller's own process tree.
    cpu_other_percent_limit: float = Field(50.0, ge=0)

    # Unified-memory APUs (Strix Halo) freeze instead of failing when memory runs out.
    memory_min_available_bytes: int = Field(2 * 2**30, ge=0)
    memory_min_available_fraction: float = Field(0.10, ge=0, le=1)

    gpu_busy_percent_limit: float = Field(10.0, ge=0, le=100, description="pre-check only")
    # A vendor tool call costs tens of ms of CPU: every 30 s keeps the sampler under 1% of a core.
    gpu_check_every_s: float = Field(30.0, gt=0, description="sampler: how often to ask the GPU tools")
    tool_timeout_s: float = Field(5.0, gt=0)

    download_dirs: tuple[Path, ...] | None = Field(
        None, description="None = the HF hub, HF datasets and pip caches"
    )
    download_patterns: tuple[str, ...] = ("*.incomplete", "*.part", "*.partial", "*.download", "*.tmp")
    download_scan_depth: int = Field(4, ge=0, le=12)


def load_guard_config(path: Path) -> GuardConfig:
    """Read the `guard` section of a TOML or YAML file (or the whole file if it has no such section),
    through the one config reader (`harness.config.read_config_file`)."""
    data = read_config_file(path)
    section = data.get("guard", data)
    try:
        return GuardConfig.model_validate(section)
    except ValidationError as exc:
        problems = [
            f"guard.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}, got {err.get('input')!r}"
            for err in exc.errors()
        ]
        raise ConfigError(str(path), problems) from None
