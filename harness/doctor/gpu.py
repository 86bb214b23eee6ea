"""The GPU checks: runtime, devices torch sees, device nodes, groups, gfx arch, integrated GPUs, memory.

Each `check_<thing>(facts, accelerator)` is pure over `HostFacts`; `accelerator` is what the run needs
("rocm", "cuda" or "cpu": the stack's, else what the host has). A check only a GPU run needs is declared
with `gpu_check(name, …)`: it skips, saying why, on a run that does not use what it checks. The fixes are
the ones seed 1 and seed 2 needed on real boxes: render/video groups, the iGPU listed as device 0,
HSA_OVERRIDE_GFX_VERSION, the APU's unified-memory cap.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import wraps

from harness.doctor.facts import HostFacts, Node
from harness.doctor.result import Check, fail, ok, skip
from harness.gpu.arch import OVERRIDE_ENV, check_gfx_support
from harness.gpu.visibility import gpu_agents, hidden_integrated_gpus, is_integrated

GIB = 2**30
CPU_PROFILE = "docker compose --profile cpu run --rm smoke-cpu"
GPU_RUNS = ("rocm", "cuda")
CheckFn = Callable[[HostFacts, str], Check]
CheckBody = Callable[[str, HostFacts, str], Check]  # a check's own name first, for its ok/fail lines


def gpu_check(
    name: str, *, runs: tuple[str, ...] = GPU_RUNS, skipped: str = "CPU run"
) -> Callable[[CheckBody], CheckFn]:
    """The shape the GPU checks share: a name, and a skip (`skipped` says why) when the run is not one of
    `runs`."""

    def declare(body: CheckBody) -> CheckFn:
        @wraps(body)
        def check(facts: HostFacts, accelerator: str) -> Check:
            if accelerator not in runs:
                return skip(name, skipped)
            return body(name, facts, accelerator)

        return check

    return declare


def host_accelerator(facts: HostFacts) -> str:
    """What the machine has: ROCm when KFD is there, CUDA when nvidia-smi answers, else CPU."""
    if any(n.path.endswith("/kfd") for n in facts.nodes) or facts.kfd_gfx:
        return "rocm"
    if facts.nvidia:
        return "cuda"
    return "cpu"


def _gpu_count(facts: HostFacts, accelerator: str) -> int:
    if accelerator == "rocm":
        return len(gpu_agents(facts.agents)) or len(facts.kfd_gfx)
    if accelerator == "cuda":
        return len(facts.nvidia or ())
    return 0


def check_gpu_runtime(facts: HostFacts, accelerator: str) -> Check:
    name = "GPU runtime"
    t = facts.torch
    if t is None:
        return fail(
            name,
            f"torch cannot be imported ({facts.torch_missing})",
            "install the stack: make setup, or use the image",
        )
    build = f"torch {t.version}" + (
        f" (HIP {t.hip})" if t.hip else f" (CUDA {t.cuda})" if t.cuda else " (CPU build)"
    )
    if accelerator == "cpu":
        return ok(name, f"{build}; CPU run, no GPU runtime needed")
    if accelerator == "rocm":
        if not t.hip:
            return fail(
                name,
                f"{build}, but this run needs ROCm",
                "use the ROCm image (docker compose run --rm smoke) or a venv on a ROCm torch",
            )
        rocm = (
            f"ROCm {facts.rocm_version}"
            if facts.rocm_version
            else "ROCm version unknown (/opt/rocm/.info/version absent)"
        )
        return ok(name, f"{rocm}, {build}")
    if not t.cuda:
        return fail(
            name,
            f"{build}, but this run needs CUDA",
            "use the CUDA image (docker compose --profile nvidia run --rm smoke-nvidia)",
        )
    driver = (
        f"NVIDIA driver {facts.nvidia[0].driver}" if facts.nvidia else "no nvidia-smi: driver version unknown"
    )
    return ok(name, f"{driver}, {build}")


@gpu_check("GPUs torch sees")
def check_torch_devices(name: str, facts: HostFacts, accelerator: str) -> Check:
    present = _gpu_count(facts, accelerator)
    t = facts.torch
    if t is None:
        return skip(name, "torch not importable (see GPU runtime)")
    var = "HIP_VISIBLE_DEVICES" if accelerator == "rocm" else "CUDA_VISIBLE_DEVICES"
    if t.error:
        return fail(
            name,
            f"torch failed asking for GPUs: {t.error}",
            "check the device nodes and groups below, then the driver (dmesg)",
        )
    if t.device_count == 0:
        if facts.env.get(var) == "" or facts.env.get("ROCR_VISIBLE_DEVICES") == "":
            return fail(
                name,
                f"torch sees 0 of {present} GPU(s): {var} or ROCR_VISIBLE_DEVICES is set but empty",
                f"unset it (an empty value hides every GPU): unset {var} ROCR_VISIBLE_DEVICES",
            )
        return fail(
            name,
            f"torch sees 0 of {present} GPU(s) on this host",
            "see the device-node and group checks; inside a container, pass the GPUs (compose's GPU services do)",
        )
    names = ", ".join(t.device_names) or "unnamed"
    return ok(name, f"torch sees {t.device_count} of {present} GPU(s) present: {names}")


def _gpu_nodes(facts: HostFacts, accelerator: str) -> list[Node]:
    if accelerator == "rocm":
        return [n for n in facts.nodes if n.path.endswith("/kfd") or "/dri/renderD" in n.path]
    return [
        n for n in facts.nodes if re.search(r"/nvidia(\d+|ctl)$", n.path)
    ]  # not -uvm, -caps: made on demand


@gpu_check("device nodes", skipped="CPU run: no GPU device nodes needed")
def check_device_nodes(name: str, facts: HostFacts, accelerator: str) -> Check:
    nodes = _gpu_nodes(facts, accelerator)
    if accelerator == "rocm":
        if not any(n.path.endswith("/kfd") for n in nodes):
            fix = (
                "run the container with --device /dev/kfd --device /dev/dri (compose's ROCm services do)"
                if facts.in_container
                else f"no AMD ROCm kernel driver here: install amdgpu-dkms and reboot; on a CPU or NVIDIA host use {CPU_PROFILE} or --profile nvidia"
            )
            return fail(name, "/dev/kfd is missing", fix)
        if not any("/dri/renderD" in n.path for n in nodes):
            return fail(
                name,
                "/dev/kfd present but no /dev/dri/renderD* node",
                "pass --device /dev/dri too, or check that amdgpu bound the GPU (dmesg | grep amdgpu)",
            )
    elif not nodes:
        return fail(
            name,
            "no /dev/nvidia* node",
            "install the NVIDIA driver; in a container, the NVIDIA Container Toolkit (--gpus all)",
        )
    if facts.identity is None:
        return skip(name, f"{', '.join(n.path for n in nodes)} present; `id` gave nothing, access not judged")
    refused = [n for n in nodes if not facts.identity.can_read_write(n)]
    if refused:
        gids = sorted({n.gid for n in refused})
        return fail(
            name,
            f"{', '.join(n.path for n in refused)}: no read/write for {facts.identity.user}",
            f"join the group owning them (GID {', '.join(map(str, gids))}): see the groups line",
        )
    return ok(name, f"{', '.join(n.path for n in nodes)}: read/write for {facts.identity.user}")


@gpu_check("groups")
def check_groups(name: str, facts: HostFacts, accelerator: str) -> Check:
    nodes = _gpu_nodes(facts, accelerator)
    me = facts.identity
    if me is None or not nodes:
        return skip(name, "no identity or no device node to compare")
    gids = sorted({n.gid for n in nodes})
    mine = ", ".join(f"{n}({g})" for g, n in sorted(me.groups.items()))
    if me.uid == 0:
        return ok(name, f"root: every node is open; node GIDs {gids}")
    missing = sorted(
        {n.gid for n in nodes if not me.can_read_write(n) and n.gid not in me.groups and n.gid != me.gid}
    )
    if missing:
        fix = (
            f'pass the host\'s GID: LORABENCH_RENDER_GID={missing[0]} (eval "$(bash scripts/host_env.sh)" sets it)'
            if facts.in_container
            else f"sudo usermod -aG render,video {me.user}, then log out and in (the nodes belong to GID {', '.join(map(str, missing))})"
        )
        return fail(name, f"{me.user} is in {mine}; the device nodes belong to GID(s) {gids}", fix)
    return ok(name, f"{me.user} is in {mine}; device nodes belong to GID(s) {gids}")


def _effective_visible(facts: HostFacts) -> str | None:
    """HIP_VISIBLE_DEVICES as a run will have it: the user's, else the iGPU hiding lorabench applies."""
    if "HIP_VISIBLE_DEVICES" in facts.env:
        return facts.env["HIP_VISIBLE_DEVICES"]
    return hidden_integrated_gpus(facts.agents)


@gpu_check("gfx arch")
def check_gfx_arch(name: str, facts: HostFacts, accelerator: str) -> Check:
    t = facts.torch
    if accelerator == "cuda":
        if not facts.nvidia or t is None or not t.arch_list:
            return skip(name, "no compute capability or torch arch list to compare")
        bad = [
            g
            for g in facts.nvidia
            if g.compute_cap
            and f"sm_{g.compute_cap.replace('.', '')}" not in t.arch_list
            and f"compute_{g.compute_cap.replace('.', '')}" not in t.arch_list
        ]
        caps = ", ".join(
            sorted({f"sm_{g.compute_cap.replace('.', '')}" for g in facts.nvidia if g.compute_cap})
        )
        if bad:
            return fail(
                name,
                f"GPU {bad[0].index} ({bad[0].name}) is compute {bad[0].compute_cap}; torch has {', '.join(t.arch_list)}",
                "use a torch built for it (the cuda13 image's)",
            )
        return ok(name, f"{caps}: torch has kernels for it ({', '.join(t.arch_list)})")
    gpus = list(facts.kfd_gfx) or [a.get("Name", "?") for a in gpu_agents(facts.agents)]
    if t is None or not t.hip:
        return skip(name, f"GPUs {', '.join(gpus) or 'none'}; no ROCm torch to compare with")
    result = check_gfx_support(
        gpus, t.arch_list, override=facts.env.get(OVERRIDE_ENV) or None, visible=_effective_visible(facts)
    )
    if result.ok:
        return ok(name, result.message)
    return fail(name, result.message.split(": ", 1)[0], result.message.split(": ", 1)[-1])


@gpu_check("integrated GPUs", runs=("rocm",), skipped="not a ROCm run")
def check_integrated_gpus(name: str, facts: HostFacts, accelerator: str) -> Check:
    gpus = gpu_agents(facts.agents)
    if not gpus:
        return skip(name, "rocminfo gave no GPU agents")
    integrated = [(i, a) for i, a in enumerate(gpus) if is_integrated(a)]
    if not integrated:
        return ok(name, "none: every GPU is discrete")
    listed = ", ".join(f"{i}: {a.get('Name')} ({a.get('Marketing Name', '?')})" for i, a in integrated)
    if len(integrated) == len(gpus):
        return ok(name, f"{listed} is the only GPU (an APU): kept visible")
    hide = hidden_integrated_gpus(facts.agents)
    user = facts.env.get("HIP_VISIBLE_DEVICES")
    if user is None:
        return ok(name, f"{listed} will be hidden: lorabench sets HIP_VISIBLE_DEVICES={hide} at run start")
    if not user.strip():
        return fail(
            name,
            f"{listed} next to discrete GPUs, and HIP_VISIBLE_DEVICES is set but empty",
            "unset HIP_VISIBLE_DEVICES (an empty value turns off lorabench's iGPU hiding)",
        )
    shown = {p.strip() for p in user.split(",")}
    leaked = [f"{i}: {a.get('Name')}" for i, a in integrated if str(i) in shown]
    if leaked:
        return fail(
            name,
            f"HIP_VISIBLE_DEVICES={user} keeps the integrated GPU {', '.join(leaked)} visible (DDP would put a rank on it)",
            f"export HIP_VISIBLE_DEVICES={hide}",
        )
    return ok(name, f"{listed} hidden by your HIP_VISIBLE_DEVICES={user}")


@gpu_check("CUDA MPS", runs=("cuda",), skipped="not a CUDA run")
def check_mps(name: str, facts: HostFacts, accelerator: str) -> Check:
    """Not a requirement: where a CUDA GPU is shared by the suite's seeds, one MPS server runs their kernels
    at once (Exp A's warm suite on the lent H200s: medians 56.1 s against 61.7 s; harness/gpu/mps.py)."""
    if facts.mps_host_pipe:
        return ok(
            name, f"the host's daemon ({facts.mps_host_pipe}): the suite's seeds that share a GPU use it"
        )
    if facts.mps_control:
        return ok(
            name, f"{facts.mps_control}: the suite starts a server of its own for the seeds that share a GPU"
        )
    return skip(name, "no nvidia-cuda-mps-control: the suite's seeds that share a GPU take turns on it")


def check_memory(facts: HostFacts, accelerator: str) -> Check:
    from harness.doctor.facts import rocminfo_pools

    name = "memory"
    total, available = facts.meminfo.get("MemTotal"), facts.meminfo.get("MemAvailable")
    ram = (
        f"RAM {total / GIB:.1f} GiB, {available / GIB:.1f} GiB available"
        if total and available
        else "RAM unknown"
    )
    if accelerator == "cuda" and facts.nvidia:
        vram = ", ".join(f"{g.memory_mib / 1024:.0f} GiB" for g in facts.nvidia if g.memory_mib)
        return ok(name, f"{ram}; VRAM {vram}")
    if accelerator != "rocm":
        return ok(name, ram)
    gpus = gpu_agents(facts.agents)
    pools = rocminfo_pools(facts.rocminfo or "")
    sizes = ", ".join(f"{p / GIB:.1f} GiB" if p else "?" for p in pools) or "?"
    apu = bool(gpus) and all(is_integrated(a) for a in gpus)
    if not apu:
        return ok(name, f"{ram}; GPU memory {sizes}")
    # An APU allocates from system RAM up to the GTT/TTM cap (or its firmware carve-out); a cap far below RAM
    # wastes the point of it (the larger model of Exp D does not fit),
    # and a model that outgrows it freezes the machine instead of failing (seed 2's Strix Halo).
    pool = pools[0] if pools else None
    if pool and total and pool < total * 3 // 4:
        pages = (total - 8 * GIB) // 4096
        return fail(
            name,
            f"{ram}; the APU may use {pool / GIB:.1f} GiB (unified-memory cap below 3/4 of RAM)",
            f"raise the cap: kernel parameters ttm.pages_limit={pages} amdgpu.gttsize={(total - 8 * GIB) // 2**20} "
            "(RAM minus 8 GiB), or a larger UMA carve-out in the firmware; then reboot",
            blocking=False,
        )
    return ok(name, f"{ram}; APU unified memory: the GPU may use {sizes}")
