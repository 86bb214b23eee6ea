"""A stranger's first compose commands: no service image is ever asked of a registry (none serves lorabench:*;
compose builds it from its Dockerfile instead), options alone after a service are lorabench's (`--help` is
lorabench's help, not bash's `exec`), and scripts/host_env.sh finds the ../shared data that `make bench` finds.
The compose rendering needs no engine; the image's own --help runs where lorabench:cpu is built (CI)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from containerlib import IMAGE, ROOT, HostDirs, compose_run, host_env

SHARED = Path("data/sql-create-context/random-sample.jsonl")


def test_every_service_builds_its_image_and_never_pulls_it(tmp_path: Path) -> None:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker client; CI installs it with: bash scripts/docker_engine.sh")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORABENCH_")}
    env |= dict.fromkeys(("LORABENCH_UID", "LORABENCH_GID", "LORABENCH_RENDER_GID"), "1000")
    env |= {"LORABENCH_VIDEO_GID": "44"}
    for name in ("RESULTS_DIR", "REPORTS_DIR", "HF_CACHE", "CACHE_DIR", "DATA_DIR"):
        env[f"LORABENCH_{name}"] = str(tmp_path / name.lower())
    done = subprocess.run(
        [docker, "compose", "--profile", "*", "config", "--format", "json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if "is not a docker command" in done.stderr or "unknown command" in done.stderr:
        pytest.skip("no `docker compose` v2 plugin; bash scripts/docker_engine.sh installs it")
    assert done.returncode == 0, done.stderr
    services = json.loads(done.stdout)["services"]
    pulled = {name for name, s in services.items() if s.get("pull_policy") != "never" or "build" not in s}
    assert not pulled, f"{sorted(pulled)} would ask a registry for an image no registry has"


def test_entrypoint_passes_options_alone_to_lorabench() -> None:
    venv_bin = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"
    env = {**os.environ, "PATH": f"{venv_bin}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "scripts/entrypoint.sh", "--help"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: lorabench") and "exec [-cl]" not in done.stdout


def test_the_cpu_image_answers_help_with_lorabenchs(cpu_image: dict[str, str], host_dirs: HostDirs) -> None:
    done = compose_run(host_env(host_dirs), "bench-cpu", "--help")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("usage: lorabench"), f"{IMAGE}: {done.stdout[:200]}"


def _host_env_in(checkout: Path) -> dict[str, str]:
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts/host_env.sh", checkout / "scripts/host_env.sh")
    home = checkout.parent / "home"
    env = {"PATH": os.environ["PATH"], "HOME": str(home)}
    out = subprocess.run(["bash", "scripts/host_env.sh"], cwd=checkout, env=env,
                         capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    return dict(line.removeprefix("export ").split("=", 1) for line in out.stdout.splitlines())


def test_host_env_finds_the_shared_data_beside_the_checkout(tmp_path: Path) -> None:
    data = tmp_path / "shared" / SHARED
    data.parent.mkdir(parents=True)
    data.write_text('{"question": "q", "context": "c", "answer": "a"}\n')
    exported = _host_env_in(tmp_path / "lorabench")
    assert exported["LORABENCH_DATA_DIR"] == str(data.parent)
    assert exported["LORABENCH_DATA_IN_CONTAINER"] == "/data/random-sample.jsonl"


def test_host_env_without_shared_data_leaves_runs_to_the_hub(tmp_path: Path) -> None:
    exported = _host_env_in(tmp_path / "lorabench")
    assert exported["LORABENCH_DATA_IN_CONTAINER"] in {"''", ""}
