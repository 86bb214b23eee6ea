"""The ROCm services' entrypoint on this machine, which has no AMD GPU: lorabench:rocm-standin (Dockerfile.rocm
built by scripts/ci_containers.sh on the stand-in Debian base with the cpu stack: every line but the base) and
lorabench:cpu, each run the way compose runs a ROCm service (LORABENCH_REQUIRE_GPU=rocm), with recorded ROCm
tools on PATH replaying a 7900 XTX + iGPU desktop.

What this proves: a missing or unreadable /dev/kfd stops the container with exit 2 and the named fix; the
replayed rocminfo reaches the doctor in the image (the iGPU's hiding line) and the replayed amd-smi reaches
the guard's GPU readings. What it cannot: the image's torch is the CPU build, so the doctor there blocks on
"GPU runtime" (asserted: a CPU torch must never pass as ROCm): the real base, rocm/pytorch, is on no
reachable registry, and no stand-in base carries a HIP torch.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from containerlib import ROOT, docker

DATA = ROOT / "tests" / "data" / "gpu"
UID = 4242
REPLAY = """#!/bin/sh
# A recorded vendor tool: prints what the real one printed on a real host (tests/data/gpu/README.md).
case "$(basename "$0") $*" in
  "rocminfo"*) cat /replay/data/rocminfo-7900xtx-igpu.txt ;;
  "amd-smi process"*) cat /replay/data/amd-smi_process_mi300x.json ;;
  "amd-smi metric"*) cat /replay/data/amd-smi_metric_usage_w7700.json ;;
  *) echo "replay: no recording for $0 $*" >&2; exit 1 ;;
esac
"""


@pytest.fixture(params=["lorabench:rocm-standin", "lorabench:cpu"])
def image(request: pytest.FixtureRequest, engine: None) -> str:
    if docker("image", "inspect", request.param).returncode != 0:
        pytest.skip(f"{request.param} is not built: bash scripts/ci_containers.sh builds it")
    return request.param


def run(image: str, *args: str, env: dict[str, str] | None = None, mounts: list[str] | None = None):
    command = [
        "docker",
        "run",
        "--rm",
        "--user",
        f"{UID}:{UID}",
        "-e",
        "LORABENCH_REQUIRE_GPU=rocm",
        "-e",
        "LORABENCH_WRITABLE=",
    ]
    for key, value in (env or {}).items():
        command += ["-e", f"{key}={value}"]
    for mount in mounts or []:
        command += ["-v", mount]
    return subprocess.run([*command, image, *args], capture_output=True, text=True, timeout=300, check=False)


def replay_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "replay"
    (folder / "bin").mkdir(parents=True)
    for tool in ("rocminfo", "amd-smi"):
        (folder / "bin" / tool).write_text(REPLAY)
        (folder / "bin" / tool).chmod(0o755)
    subprocess.run(["cp", "-r", str(DATA), str(folder / "data")], check=True)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o755 if path.is_dir() else path.stat().st_mode | 0o644)
    tmp_path.chmod(0o755)
    return folder


def device_files(tmp_path: Path, mode: int) -> list[str]:
    nodes = []
    for name, target in (("kfd", "/dev/kfd"), ("renderD128", "/dev/dri/renderD128")):
        path = tmp_path / name
        path.write_text("")
        path.chmod(mode)
        nodes.append(f"{path}:{target}")
    return nodes


def test_missing_dev_kfd_stops_with_the_cpu_and_nvidia_profiles_named(image: str, tmp_path: Path) -> None:
    done = run(image, "true")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "/dev/kfd: not in the container" in done.stderr
    assert (
        "docker compose --profile cpu run --rm smoke-cpu" in done.stderr and "--profile nvidia" in done.stderr
    )
    assert "Traceback" not in done.stderr


def test_unreadable_dev_kfd_stops_naming_the_gid_to_pass(image: str, tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    done = run(image, "true", mounts=device_files(tmp_path, 0o600))  # root-owned 0600: not the user's
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        f"/dev/kfd: refused to uid {UID}" in done.stderr
        and "pass it with LORABENCH_RENDER_GID=0" in done.stderr
    )


def test_replayed_7900xtx_reaches_the_doctor_and_the_guard_in_the_image(image: str, tmp_path: Path) -> None:
    replay = replay_dir(tmp_path)
    mounts = [f"{replay}:/replay:ro", *device_files(tmp_path, 0o666)]
    env = {"PATH": "/replay/bin:/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "LORABENCH_SKIP_CHECKS": "1"}  # fmt: skip
    doctor = run(image, "lorabench", "doctor", "--json", "--no-guard", env=env, mounts=mounts)
    assert doctor.returncode == 2, doctor.stdout + doctor.stderr
    report = json.loads(doctor.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["accelerator"] == "rocm"
    assert report["blocking"]["name"] == "GPU runtime" and "CPU build" in report["blocking"]["summary"]
    assert checks["integrated GPUs"]["summary"].startswith("1: gfx1036")
    assert "HIP_VISIBLE_DEVICES=0 at run start" in checks["integrated GPUs"]["summary"]
    assert checks["device nodes"]["status"] == "ok"
    guard = run(image, "lorabench", "guard", "--json", env=env, mounts=mounts)
    readings = {r["name"]: r for r in json.loads(guard.stdout)["readings"]}
    foreign = readings["gpu_foreign_processes"]
    assert not foreign["ok"] and "llama-server" in foreign["detail"], foreign
