"""ROCm: does this image's torch have kernels for the host's GPUs? HIP loads a GPU fine and then fails on
the first kernel ("invalid device function"), so a container's entrypoint checks before a run
(scripts/container_checks.py). Pure over KFD's topology files (tests feed recorded ones); the fix named
in each error is HSA_OVERRIDE_GFX_VERSION or HIP_VISIBLE_DEVICES.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")
OVERRIDE_ENV = "HSA_OVERRIDE_GFX_VERSION"


@dataclass(frozen=True)
class GfxCheck:
    ok: bool
    message: str


def gfx_name(target_version: int) -> str:
    """KFD's gfx_target_version (major*10000 + minor*100 + stepping) as an ISA name: 110501 -> gfx1151,
    90010 -> gfx90a (minor and stepping are one hex digit each in the name)."""
    major, minor, stepping = target_version // 10000, target_version // 100 % 100, target_version % 100
    return f"gfx{major}{minor:x}{stepping:x}"


def gfx_version(name: str) -> str | None:
    """The HSA_OVERRIDE_GFX_VERSION spelling of an ISA name: gfx1100 -> 11.0.0, gfx90a -> 9.0.10."""
    m = re.fullmatch(r"gfx(\d{1,2})([0-9a-f])([0-9a-f])", name)
    return f"{int(m[1])}.{int(m[2], 16)}.{int(m[3], 16)}" if m else None


def gfx_from_override(value: str) -> str | None:
    """HSA_OVERRIDE_GFX_VERSION ("11.0.0") as the ISA name the runtime then reports; None if malformed."""
    m = re.fullmatch(r"\s*(\d{1,2})\.(\d{1,2})\.(\d{1,2})\s*", value)
    if not m or int(m[2]) > 15 or int(m[3]) > 15:
        return None
    return gfx_name(int(m[1]) * 10000 + int(m[2]) * 100 + int(m[3]))


def parse_kfd_properties(text: str) -> int | None:
    """gfx_target_version from a KFD node's properties file (0 on CPU nodes); None when absent."""
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "gfx_target_version" and value.strip().isdigit():
            return int(value)
    return None


def read_kfd_gfx(nodes: Path = KFD_NODES) -> list[str]:
    """The GPUs' ISA names in KFD node order, which is the order HIP numbers devices in; [] without KFD."""
    try:
        numbered = sorted((int(p.name), p) for p in nodes.iterdir() if p.name.isdigit())
    except OSError:
        return []
    names = []
    for _, node in numbered:
        try:
            version = parse_kfd_properties((node / "properties").read_text())
        except OSError:
            continue  # a node masked by the device cgroup reads EPERM: not ours to use
        if version:
            names.append(gfx_name(version))
    return names


def _visible(spec: str | None, count: int) -> list[int]:
    """Indices HIP_VISIBLE_DEVICES leaves (integers only; UUIDs cannot be mapped here, so all count)."""
    if not spec or not spec.strip():
        return list(range(count))
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if not all(p.isdigit() for p in parts):
        return list(range(count))
    return [int(p) for p in parts if int(p) < count]


def check_gfx_support(
    gpus: list[str], torch_archs: Iterable[str], *, override: str | None = None, visible: str | None = None
) -> GfxCheck:
    """Each visible GPU (after HSA_OVERRIDE_GFX_VERSION) against the archs torch was built for."""
    archs = sorted({a.split(":", 1)[0] for a in torch_archs if a.startswith("gfx")})
    if not gpus:
        return GfxCheck(True, "no AMD GPU in the KFD topology: gfx arch not checked")
    if not archs:
        return GfxCheck(True, f"torch lists no gfx archs: {', '.join(gpus)} not checked")
    effective = None
    if override:
        effective = gfx_from_override(override)
        if effective is None:
            return GfxCheck(
                False,
                f"{OVERRIDE_ENV}={override!r} is not major.minor.stepping; "
                f"e.g. {OVERRIDE_ENV}=11.0.0 runs gfx1100 kernels, or unset it",
            )
    indices = _visible(visible, len(gpus))
    bad = [(i, gpus[i]) for i in indices if (effective or gpus[i]) not in archs]
    shown = ", ".join(f"{i}: {gpus[i]}" for i in indices)
    if not bad:
        via = f" ({OVERRIDE_ENV}={override} -> {effective})" if effective else ""
        return GfxCheck(True, f"GPUs {shown}{via}: torch has kernels for them")
    index, name = bad[0]
    if effective:
        return GfxCheck(
            False,
            f"{OVERRIDE_ENV}={override} makes GPU {index} ({name}) run {effective} kernels, which this image's "
            f"torch does not have (it has {', '.join(archs)}); set it to one of those or unset it",
        )
    family = [a for a in archs if a[:-2] == name[:-2]]
    hint = (
        f"set {OVERRIDE_ENV}={gfx_version(family[0])} to run {family[0]} kernels on it (same family; at your own "
        "risk), "
        if family
        else ""
    )
    return GfxCheck(
        False,
        f"GPU {index} is {name}, but this image's torch has kernels only for {', '.join(archs)}: {hint}"
        f"hide it with HIP_VISIBLE_DEVICES (an iGPU?), or use a stack built for {name}",
    )
