"""Hide integrated GPUs from HIP when a discrete GPU is present.

Why: on a desktop Ryzen (gfx1036 iGPU) next to an RX 7900 XTX, ROCm lists the iGPU as another device;
`torch.cuda.device_count()` counts it, DDP puts a rank on it, and the run crashes or crawls. The fix is
HIP_VISIBLE_DEVICES listing only the discrete GPUs. Careful with APUs that ARE the main GPU: on Strix
Halo (gfx1151) the "integrated" GPU is the only one, so nothing is hidden unless a discrete GPU exists.

HIP ordinals are the GPU agents in rocminfo order (CPU agents skipped), which HIP_VISIBLE_DEVICES
indexes when ROCR_VISIBLE_DEVICES is unset; only `hide_integrated_gpus` runs rocminfo.
"""

from __future__ import annotations

import os
import re

# gfx targets that only ship as APU/integrated graphics (LLVM AMDGPU processor table).
INTEGRATED_GFX = frozenset(
    {
        "gfx801",
        "gfx902",
        "gfx909",
        "gfx90c",
        "gfx1013",
        "gfx1033",
        "gfx1035",
        "gfx1036",
        "gfx1037",
        "gfx1103",
        "gfx1150",
        "gfx1151",
        "gfx1152",
        "gfx1153",
    }
)

_AGENT_HEADER = re.compile(r"^\s*Agent\s+\d+\s*$")
_FIELD = re.compile(r"^  (?P<key>[A-Za-z][A-Za-z ]*?):\s+(?P<value>.*?)\s*$")


def parse_rocminfo(text: str) -> list[dict[str, str]]:
    """One dict per HSA agent with its top-level fields (`Name`, `Marketing Name`, `Device Type`, `Uuid`…).
    Nested sections (ISA info, pools) are indented deeper and ignored."""
    agents: list[dict[str, str]] = []
    for line in text.splitlines():
        if _AGENT_HEADER.match(line):
            agents.append({})
        elif agents and (m := _FIELD.match(line)) and m["key"] not in agents[-1]:
            agents[-1][m["key"]] = m["value"]
    return agents


def gpu_agents(agents: list[dict[str, str]]) -> list[dict[str, str]]:
    return [a for a in agents if a.get("Device Type", "").upper() == "GPU"]


def is_integrated(agent: dict[str, str]) -> bool:
    return agent.get("Name", "").lower() in INTEGRATED_GFX


def hidden_integrated_gpus(agents: list[dict[str, str]]) -> str | None:
    """HIP_VISIBLE_DEVICES that keeps only discrete GPUs, or None when nothing should be hidden (no
    iGPU, or no discrete GPU to prefer over it, as on Strix Halo)."""
    gpus = gpu_agents(agents)
    discrete = [i for i, a in enumerate(gpus) if not is_integrated(a)]
    if not discrete or len(discrete) == len(gpus):
        return None
    return ",".join(str(i) for i in discrete)


def describe_hidden(agents: list[dict[str, str]]) -> str | None:
    """One line for the findings table: which devices were hidden and why; None when none were."""
    value = hidden_integrated_gpus(agents)
    if value is None:
        return None
    gpus = gpu_agents(agents)
    hidden = [
        f"{i}:{a.get('Name')} ({a.get('Marketing Name', '?')})"
        for i, a in enumerate(gpus)
        if is_integrated(a)
    ]
    return f"integrated GPU(s) {', '.join(hidden)} hidden from HIP: HIP_VISIBLE_DEVICES={value}"


def hide_integrated_gpus(environ: dict[str, str] | None = None) -> str | None:
    """Before torch first touches HIP: set HIP_VISIBLE_DEVICES so an iGPU next to a discrete GPU is not
    used as an extra card. Respects a value the user already set. Returns the finding line, or None.
    Skips quietly where rocminfo is absent (CUDA and CPU hosts)."""
    import shutil
    import subprocess

    env = os.environ if environ is None else environ
    if "HIP_VISIBLE_DEVICES" in env or not shutil.which("rocminfo"):
        return None
    try:
        text = subprocess.run(["rocminfo"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    agents = parse_rocminfo(text)
    value = hidden_integrated_gpus(agents)
    if value is None:
        return None
    env["HIP_VISIBLE_DEVICES"] = value
    return describe_hidden(agents)
