"""Where a number came from: one small `collect_<source>()` per source, each skipping quietly what the
host cannot tell, joined by `collect_provenance()`. Nothing here changes the machine."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import psutil

from harness import settings, stack_name
from harness.cpuinfo import bf16_flag, cpu_flags, isa_tier, model_name, read_cpuinfo
from harness.gpu.facts import collect_gpus
from harness.json_types import JsonObject
from harness.origin import Provenance
from harness.results import slug

PACKAGES = (
    "torch",
    "transformers",
    "peft",
    "trl",
    "accelerate",
    "datasets",
    "tokenizers",
    "safetensors",
    "bitsandbytes",
    "unsloth",
    "unsloth_zoo",
    "xformers",
    "triton",
    "pytorch-triton-rocm",
    "gguf",
    "lorabench",
)
REPO_ROOT = Path(__file__).resolve().parent.parent


def collect_cpu(cpuinfo: str | None = None) -> JsonObject:
    """Arch, cores, model name, and what decides CPU speed and kernels: the instruction tier and the
    flag that gives bf16 in hardware (both from /proc/cpuinfo, which psutil does not report; `cpuinfo` = its
    text, for tests)."""
    text = read_cpuinfo() if cpuinfo is None else cpuinfo
    info: JsonObject = {"arch": platform.machine(), "logical_cores": os.cpu_count()}
    if name := model_name(text):
        info["model"] = name
    if text:
        flags = cpu_flags(text)
        info["isa"] = isa_tier(flags)
        info["bf16"] = bf16_flag(flags)
    return info


def collect_memory() -> JsonObject:
    """Total RAM (psutil: MemTotal of /proc/meminfo on Linux, and the other systems' own counters)."""
    try:
        return {"ram_bytes": psutil.virtual_memory().total}
    except OSError:  # no /proc (a sandbox): the record says nothing rather than a guess
        return {}


def collect_os() -> JsonObject:
    return {"kernel": platform.release(), "system": platform.system(), "python": platform.python_version()}


def collect_host() -> JsonObject:
    host = {"cpu": collect_cpu(), **collect_memory(), **collect_os(), **collect_gpus()}
    host["id"] = host_id(host)
    host["kind"] = host_kind(host)
    return host


def host_id(host: JsonObject) -> str:
    """A short, stable label: the GPU model (×count in the machine), else the CPU model and core count."""
    gpus = host.get("gpus") or []
    if gpus:
        name = gpus[0]["name"]
        count = host.get("machine_gpus") or len(gpus)
        return slug(f"{name}x{count}" if count > 1 else name)
    cpu = host.get("cpu", {})
    return slug(f"cpu-{cpu.get('model', platform.machine())}-{cpu.get('logical_cores', '')}c")


def host_kind(host: JsonObject) -> str:
    """The kind of host a record answers for (the fingerprint's host; see the stand-in rule in
    harness/suite/cache.py): what decides a run's numbers and what `auto` resolves to. A GPU host: its
    id (GPU model × count). A CPU host: architecture, logical cores (torch's threads, so the order of its
    sums) and instruction tier (amx, avx512bf16, …: which kernels run, and whether bf16 is in hardware),
    not the model name: an AMD EPYC and an Intel Xeon of one tier are one kind."""
    if host.get("gpus"):
        return host_id(host)
    cpu = host.get("cpu", {})
    return slug(
        f"cpu-{cpu.get('arch', platform.machine())}-{cpu.get('logical_cores', '')}c-{cpu.get('isa', 'base')}"
    )


def collect_packages() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _file_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def collect_stack(stack: str) -> JsonObject:
    """The software stack: its name, installed versions, lockfile hash and image digest (when in an image)."""
    lockfile = str(settings.LOCKFILE.get() or REPO_ROOT / "lockfiles" / f"{stack}.txt")
    # pinned: a stack of lockfiles/stacks.toml; false for a venv named by what it is (harness/stack_name.py).
    info: JsonObject = {
        "name": stack,
        "pinned": stack_name.is_pinned(stack),
        "packages": collect_packages(),
    }
    digest = _file_sha256(Path(lockfile))
    if digest:
        info["lockfile"] = (
            os.path.relpath(lockfile, REPO_ROOT) if lockfile.startswith(str(REPO_ROOT)) else lockfile
        )
        info["lockfile_sha256"] = digest
    for key, setting in (
        ("image", settings.IMAGE),
        ("image_digest", settings.IMAGE_DIGEST),
        ("base_image", settings.BASE_IMAGE),
    ):
        if value := setting.get():
            info[key] = value
    return info


def collect_image() -> JsonObject:
    """A run inside one of lorabench's images says so: what the Dockerfile set at build time (image name, its
    base by digest, git sha), the image id compose passes at run time (LORABENCH_IMAGE_DIGEST, from
    scripts/host_env.sh; an image cannot know its own id), and whether the guard could see the host."""
    image = settings.IMAGE.get()
    if not image:
        return {}
    from harness.guard.hostview import host_view

    view = host_view()
    info: JsonObject = {
        "name": image,
        "digest": settings.IMAGE_DIGEST.get(),
        "base": settings.BASE_IMAGE.get(),
        "in_container": view.in_container,
        "guard_sees_host": view.sees_host,
    }
    if not info["digest"]:
        info["digest_missing"] = 'not passed at run time: eval "$(bash scripts/host_env.sh)" after building'
    return info


def collect_git() -> JsonObject:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    # An image has no .git: its build baked the sha and whether the tree had uncommitted changes.
    baked = settings.GIT_SHA.get()
    if baked:
        dirty = settings.GIT_DIRTY.get()
        return {"sha": baked, "dirty": dirty, "from": "image build"}
    sha = git("rev-parse", "HEAD")
    if not sha:
        return {}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"sha": sha, "dirty": bool(status)}


# Variables that change a figure without changing the setup: the GPU caching allocator's mode, a preloaded
# or tuned malloc, the CPU kernels' thread pools, launch and math switches. A `packed-liger-expandable` run
# differed from `packed-liger` only in PYTORCH_CUDA_ALLOC_CONF and ran 1.21x faster; without it in the
# record the two looked like for like (issue 38).
ENVIRONMENT = (
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_HIP_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "PYTORCH_TUNABLEOP_ENABLED",
    "TORCH_BLAS_PREFER_HIPBLASLT",
    "CUBLAS_WORKSPACE_CONFIG",
    "NVIDIA_TF32_OVERRIDE",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "HSA_OVERRIDE_GFX_VERSION",
    "LD_PRELOAD",
    "MALLOC_CONF",
    "_RJEM_MALLOC_CONF",
    "TCMALLOC_RELEASE_RATE",
    "GLIBC_TUNABLES",
    "MALLOC_ARENA_MAX",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "OMP_PROC_BIND",
    "OMP_PLACES",
    "OMP_WAIT_POLICY",
    "KMP_AFFINITY",
    "KMP_BLOCKTIME",
)


def collect_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of ENVIRONMENT set for this run, as set (the trainer inherits them). Unset ones are left
    out, so an empty mapping means none was set; a record without the key predates this collector."""
    env = os.environ if environ is None else environ
    return {name: env[name] for name in ENVIRONMENT if name in env}


def default_stack() -> str:
    """$LORABENCH_STACK, else the pinned stack installed here, else the venv named by torch and its runtime."""
    return stack_name.default_stack()


def collect_provenance(stack: str, hidden_gpus: str | None = None) -> Provenance:
    """The record's provenance; `hidden_gpus`: what the run hid from HIP before torch looked (the finding line)."""
    host = collect_host()
    if hidden_gpus:
        host["hidden_gpus"] = hidden_gpus
    provenance: JsonObject = {
        "host": host,
        "stack": collect_stack(stack),
        "git": collect_git(),
        "environment": collect_environment(),
        "collected": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if image := collect_image():
        provenance["image"] = image
    return Provenance.model_validate(provenance)
