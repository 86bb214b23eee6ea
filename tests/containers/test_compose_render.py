"""compose.yaml as real Compose v2 renders it (`docker compose config`, the binary CI installs with
scripts/docker_engine.sh) for the hosts it is written for, each with its GPU variables unset and set:
what every service gets (environment, devices, groups, user, ipc/shm, mounts, command). Needs no engine.

And scripts/compose_run.sh, the wrapper that answers a ROCm service on a host without /dev/kfd itself
(naming the CPU and NVIDIA profiles) before Docker answers "error gathering device information".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
VISIBILITY = (
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "HSA_OVERRIDE_GFX_VERSION",
)
ROCM = {"bench", "smoke", "bench-setups"}  # bench-setups: bench with your own setups folder mounted
NVIDIA = {"bench-nvidia", "smoke-nvidia"}
CPU = {"bench-cpu", "smoke-cpu", "report-cpu"}
REPORT = {"report", "report-cpu"}

# What scripts/host_env.sh exports on each host (GIDs as Debian/Ubuntu number render and video).
HOSTS: dict[str, dict[str, str]] = {
    "rocm-dgpu-igpu": {"LORABENCH_RENDER_GID": "109", "LORABENCH_VIDEO_GID": "44"},
    "rocm-apu": {"LORABENCH_RENDER_GID": "992", "LORABENCH_VIDEO_GID": "44"},
    "nvidia": {"LORABENCH_RENDER_GID": "1000", "LORABENCH_VIDEO_GID": "44"},
    # Neither group (a minimal host): render is your own GID, video nogroup (compose refuses a GID twice).
    "cpu-only": {"LORABENCH_RENDER_GID": "1000", "LORABENCH_VIDEO_GID": "65534"},
}
# What a user of each host may set; `unset` renders with none of them.
SET_VARS: dict[str, dict[str, str]] = {
    "rocm-dgpu-igpu": {"HIP_VISIBLE_DEVICES": "0,2"},
    "rocm-apu": {"HSA_OVERRIDE_GFX_VERSION": "11.5.1", "ROCR_VISIBLE_DEVICES": "0"},
    "nvidia": {"CUDA_VISIBLE_DEVICES": "1"},
    "cpu-only": {},
}


def compose() -> str:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker client; CI installs it with: bash scripts/docker_engine.sh")
    version = subprocess.run([docker, "compose", "version"], capture_output=True, text=True, check=False)
    if version.returncode != 0:
        pytest.skip("no `docker compose` v2 plugin; install it with: bash scripts/docker_engine.sh")
    return docker


def render(host: str, tmp_path: Path, extra: dict[str, str]) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in VISIBILITY and not k.startswith("LORABENCH_")}
    env |= {
        "LORABENCH_UID": "1000", "LORABENCH_GID": "1000",
        "LORABENCH_RESULTS_DIR": str(tmp_path / "results"), "LORABENCH_REPORTS_DIR": str(tmp_path / "reports-local"),
        "LORABENCH_HF_CACHE": str(tmp_path / "hf"), "LORABENCH_CACHE_DIR": str(tmp_path / "cache"),
        "LORABENCH_DATA_DIR": str(tmp_path / "data"),
        **HOSTS[host], **extra,
    }  # fmt: skip
    done = subprocess.run(
        [compose(), "compose", "--profile", "*", "config", "--format", "json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["services"]


def mounts(service: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    return {v["target"]: (v["source"], bool(v.get("read_only"))) for v in service["volumes"]}


@pytest.mark.parametrize("variables", ["unset", "set"])
@pytest.mark.parametrize("host", sorted(HOSTS))
def test_every_service_as_compose_renders_it(host: str, variables: str, tmp_path: Path) -> None:
    extra = SET_VARS[host] if variables == "set" else {}
    services = render(host, tmp_path, extra)
    assert set(services) == ROCM | NVIDIA | CPU | {"report"}
    for name, service in services.items():
        env = service["environment"]
        # No empty visibility variable: unset on the host is absent in the container (compose renders null,
        # and sends the name without a value, which the engine drops), set is passed as it is.
        for var in VISIBILITY:
            if var in env:
                assert env[var] is None or env[var] == extra.get(var), (name, var, env[var])
                assert env[var] != "", (name, var)
                assert (env[var] is not None) == (var in extra), (name, var, env[var])
        expected_vars = (
            {"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION"} if name in ROCM
            else {"CUDA_VISIBLE_DEVICES"} if name in NVIDIA else set()
        )  # fmt: skip
        assert {v for v in VISIBILITY if v in env} == expected_vars, name
        assert service["user"] == "1000:1000" and service["pid"] == "host", name
        # Records into the untracked results/, scorecards into the untracked reports-local/: never reports/.
        seen = mounts(service)
        assert seen["/opt/lorabench/results"] == (str(tmp_path / "results"), name in REPORT), name
        assert seen["/opt/lorabench/reports-local"] == (str(tmp_path / "reports-local"), False), name
        assert "/opt/lorabench/reports" not in seen, name
        assert seen["/data"] == (str(tmp_path / "data"), True), name
        if name not in REPORT:
            assert seen["/cache/huggingface"][0] == str(tmp_path / "hf"), name
            assert seen["/cache/lorabench"][0] == str(tmp_path / "cache"), name
        writable = env["LORABENCH_WRITABLE"].split(":")
        assert "/opt/lorabench/reports-local" in writable and "/opt/lorabench/reports" not in writable, name
        command = service["command"]
        if command[1] == "bench":
            assert command[command.index("--reports") + 1] == "reports-local", name
        if command[1] == "report":
            assert command[command.index("-o") + 1] == "reports-local", name
        if name in ROCM:
            assert [d["source"] for d in service["devices"]] == ["/dev/kfd", "/dev/dri"], name
            assert service["group_add"] == [
                HOSTS[host]["LORABENCH_VIDEO_GID"],
                HOSTS[host]["LORABENCH_RENDER_GID"],
            ]
            assert service["ipc"] == "host" and int(service["shm_size"]) == 16 * 2**30, name
            assert env["LORABENCH_REQUIRE_GPU"] == "rocm", name
        elif name in NVIDIA:
            assert "devices" not in service and "group_add" not in service, name
            [reservation] = service["deploy"]["resources"]["reservations"]["devices"]
            assert reservation["driver"] == "nvidia" and reservation["count"] == -1, name  # -1: all
            assert service["ipc"] == "host" and int(service["shm_size"]) == 16 * 2**30, name
        else:
            assert (
                not service.get("devices") and not service.get("group_add") and not service.get("deploy")
            ), name


def run_wrapper(service: str, dev: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ, "LORABENCH_DEV": str(dev), "LORABENCH_DRY_RUN": "1",
        "LORABENCH_UID": "1000", "LORABENCH_RESULTS_DIR": str(tmp_path / "results"),
    }  # fmt: skip
    return subprocess.run(["bash", "scripts/compose_run.sh", service], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip


def test_rocm_service_without_dev_kfd_is_answered_with_the_other_profiles(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    dev.mkdir()  # this machine's /dev has no kfd either; a folder keeps the test the same on a ROCm box
    done = run_wrapper("bench", dev, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{dev}/kfd does not exist" in done.stderr
    assert "docker compose --profile cpu run --rm bench-cpu" in done.stderr
    assert "bash scripts/compose_run.sh bench-nvidia" in done.stderr
    assert "error gathering device information" not in done.stderr and done.stdout == ""


def test_rocm_service_with_its_device_nodes_goes_to_docker(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    (dev / "dri").mkdir(parents=True)
    (dev / "kfd").write_text("")
    (dev / "dri" / "renderD128").write_text("")
    done = run_wrapper("smoke", dev, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "docker compose run --rm smoke"
    (dev / "dri" / "renderD128").unlink()
    done = run_wrapper("smoke", dev, tmp_path)
    assert done.returncode == 2 and "no " + f"{dev}/dri/renderD* node" in done.stderr


def test_the_wrapper_takes_every_service_compose_yaml_defines(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    (dev / "dri").mkdir(parents=True)
    (dev / "kfd").write_text("")
    (dev / "dri" / "renderD128").write_text("")
    for name in yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))["services"]:
        done = run_wrapper(name, dev, tmp_path)
        assert done.returncode == 0 and done.stdout.strip().endswith(f"run --rm {name}"), (name, done.stderr)


def test_cpu_and_nvidia_services_pick_their_profile_and_need_no_kfd(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    dev.mkdir()
    assert (
        run_wrapper("smoke-cpu", dev, tmp_path).stdout.strip()
        == "docker compose --profile cpu run --rm smoke-cpu"
    )
    assert run_wrapper("bench-nvidia", dev, tmp_path).stdout.strip() == (
        "docker compose --profile nvidia run --rm bench-nvidia"
    )


def test_an_unset_variable_is_absent_in_the_container_and_a_set_one_arrives(tmp_path: Path) -> None:
    """What the engine does with compose's null: the ROCm `bench` service started for real (on lorabench:cpu,
    its devices dropped by the rehearsal override), its environment printed."""
    docker = compose()
    if subprocess.run(
        [docker, "image", "inspect", "lorabench:cpu"], capture_output=True, check=False
    ).returncode:
        pytest.skip("lorabench:cpu is not built: bash scripts/build_image.sh cpu")
    env = {k: v for k, v in os.environ.items() if k not in VISIBILITY and not k.startswith("LORABENCH_")}
    env |= {"STACK": "cpu", "COMPOSE_FILE": "compose.yaml:tests/containers/compose.rehearsal-cpu.yaml",
            "LORABENCH_RESULTS_DIR": str(tmp_path / "r"), "LORABENCH_REPORTS_DIR": str(tmp_path / "p")}  # fmt: skip
    exported = subprocess.run(["bash", "-c", 'eval "$(bash scripts/host_env.sh)" && env -0'], cwd=ROOT, env=env,
                              capture_output=True, text=True, check=True, timeout=60).stdout  # fmt: skip
    env = dict(item.split("=", 1) for item in exported.split("\0") if "=" in item)

    def container_env(**host: str) -> dict[str, str]:
        done = subprocess.run([docker, "compose", "run", "--rm", "-T", "--entrypoint", "env", "bench"], cwd=ROOT,
                              env={**env, **host}, capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
        return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)

    unset = container_env()
    assert not {v for v in VISIBILITY if v in unset}, {v: unset[v] for v in VISIBILITY if v in unset}
    assert container_env(HIP_VISIBLE_DEVICES="0,2")["HIP_VISIBLE_DEVICES"] == "0,2"


def test_the_rehearsal_override_drops_the_gpu_devices_of_every_rocm_service(tmp_path: Path) -> None:
    """tests/containers/compose.rehearsal-cpu.yaml, which CI's ROCm stand-in smoke and the workflow rehearsals use."""
    services = render(
        "cpu-only", tmp_path, {"COMPOSE_FILE": "compose.yaml:tests/containers/compose.rehearsal-cpu.yaml"}
    )
    for name in ROCM:
        assert not services[name].get("devices") and not services[name].get("group_add"), name
        assert services[name]["environment"]["LORABENCH_REQUIRE_GPU"] == "", name
