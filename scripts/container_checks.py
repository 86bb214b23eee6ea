"""Checks at container start (scripts/entrypoint.sh), for what would otherwise fail late or obscurely:

- the folders the service writes (LORABENCH_WRITABLE, colon-separated) are writable by the container's
  user: a results/ that dockerd created root-owned is named with the chown that fixes it;
- with LORABENCH_REQUIRE_GPU=rocm: /dev/kfd and the render nodes are usable (the host's render GID was
  passed), and every visible GPU's gfx arch has kernels in this image's torch (HSA_OVERRIDE_GFX_VERSION);
- what the quiet-machine guard can see (the host, or this container only), printed, never fatal: a
  timed run is refused by the guard itself when it cannot see the host.

Exit 0 when fine, 2 with one line per problem (no traceback: these are setup mistakes, not bugs).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HOST_ENV = 'eval "$(bash scripts/host_env.sh)"'


def check_writable(paths: list[Path]) -> list[str]:
    problems = []
    uid, gid = os.getuid(), os.getgid()
    for path in paths:
        if not path.is_dir():
            problems.append(f"{path}: not a folder; mount one (compose.yaml does, after {HOST_ENV})")
        elif not os.access(path, os.W_OK | os.X_OK):
            owner = path.stat().st_uid
            problems.append(
                f"{path}: not writable by uid {uid} (owned by uid {owner} on the host); "
                f"fix on the host: sudo chown -R {uid}:{gid} <that folder>, or run {HOST_ENV} before compose"
            )
    return problems


def check_rocm_devices() -> list[str]:
    devices = [Path("/dev/kfd"), *sorted(Path("/dev/dri").glob("renderD*"))]
    if not devices[0].exists():
        return [
            "/dev/kfd: not in the container; on a ROCm host pass --device /dev/kfd --device /dev/dri (compose's "
            "ROCm services do); a host without /dev/kfd has no ROCm GPU: use the CPU profile (docker compose "
            "--profile cpu run --rm smoke-cpu) or, on NVIDIA, --profile nvidia (bash scripts/compose_run.sh checks first)"
        ]
    problems = []
    groups = sorted(set(os.getgroups()) | {os.getgid()})
    for device in devices:
        if not os.access(device, os.R_OK | os.W_OK):
            gid = device.stat().st_gid
            problems.append(
                f"{device}: refused to uid {os.getuid()} in groups {groups}; on this host it belongs to GID {gid}: "
                f"pass it with LORABENCH_RENDER_GID={gid} ({HOST_ENV} sets it), not the image's group name"
            )
    return problems


def check_rocm_gfx() -> list[str]:
    from harness.gpu.arch import OVERRIDE_ENV, check_gfx_support, read_kfd_gfx

    gpus = read_kfd_gfx()
    try:
        import torch

        archs = list(torch.cuda.get_arch_list()) or torch._C._cuda_getArchFlags().split()
    except (ImportError, AttributeError, RuntimeError) as exc:
        return [f"torch: cannot list the gfx archs it was built for ({exc}); is this a ROCm image?"]
    result = check_gfx_support(
        gpus,
        archs,
        override=os.environ.get(OVERRIDE_ENV) or None,
        visible=os.environ.get("HIP_VISIBLE_DEVICES"),
    )
    print(f"lorabench container: {result.message}", file=sys.stderr)
    return [] if result.ok else [result.message]


def main() -> int:
    writable = [Path(p) for p in os.environ.get("LORABENCH_WRITABLE", "").split(":") if p]
    problems = check_writable(writable)
    if os.environ.get("LORABENCH_REQUIRE_GPU") == "rocm":
        device_problems = check_rocm_devices()
        problems += device_problems or check_rocm_gfx()
    from harness.guard.hostview import host_view

    print(f"lorabench container: the quiet-machine guard sees {host_view().describe()}", file=sys.stderr)
    for problem in problems:
        print(f"lorabench container: {problem}", file=sys.stderr)
    return 2 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
