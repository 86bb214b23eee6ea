"""The cpu image and its compose services, run for real: what the image says it is, `report-cpu` writing
scorecards owned by the invoking user, and the failures a new user meets named with their fix.
The real smoke run (SmolLM2, shared data) is in .ci/run, timed; these stay short."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from containerlib import GID, IMAGE, ROOT, UID, HostDirs, compose_run, host_env, owners

COMMITTED_CPU_RECORDS = ROOT / "reports" / "results" / "cpu"


def test_image_carries_its_provenance_and_its_stack_verifies(cpu_image: dict[str, str]) -> None:
    env = subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", "env", IMAGE], capture_output=True, text=True, check=True
    )
    baked = dict(line.split("=", 1) for line in env.stdout.splitlines() if "=" in line)
    assert baked["LORABENCH_IMAGE"] == IMAGE
    assert baked["LORABENCH_GIT_SHA"] == cpu_image["io.lorabench.git-sha"] != "unknown"
    assert baked["LORABENCH_BASE_IMAGE"] == cpu_image["org.opencontainers.image.base.name"]
    assert baked["LORABENCH_LOCKFILE"] == "/opt/lorabench/lockfiles/cpu.txt"
    verify = subprocess.run(["docker", "run", "--rm", IMAGE, "lorabench", "stacks", "verify", "cpu"],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "stack cpu: 0 error(s)" in verify.stdout


def test_report_cpu_renders_records_into_files_owned_by_the_invoking_user(
    cpu_image: dict[str, str], host_dirs: HostDirs
) -> None:
    env = host_env(host_dirs)
    shutil.copytree(COMMITTED_CPU_RECORDS, host_dirs.results / "cpu")
    done = compose_run(env, "report-cpu")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (host_dirs.reports / "README.md").is_file()
    scorecards = list(host_dirs.reports.rglob("*.md"))
    assert len(scorecards) >= 2, scorecards
    assert owners(host_dirs.reports) == {(UID, GID)}


def test_report_cpu_fails_when_there_is_nothing_to_report(
    cpu_image: dict[str, str], host_dirs: HostDirs
) -> None:
    done = compose_run(host_env(host_dirs), "report-cpu")
    assert done.returncode != 0
    assert "no run records (seed-*.json) under results" in done.stderr
    assert "Traceback" not in done.stderr


def test_results_folder_the_user_cannot_write_is_named_with_its_fix(
    cpu_image: dict[str, str], host_dirs: HostDirs
) -> None:
    host_dirs.results.mkdir(mode=0o755)  # root-owned, as dockerd would have created it
    done = compose_run(host_env(host_dirs), "smoke-cpu")
    assert done.returncode == 2
    assert f"/opt/lorabench/results: not writable by uid {UID} (owned by uid 0 on the host)" in done.stderr
    assert f"sudo chown -R {UID}:{GID}" in done.stderr and "Traceback" not in done.stderr


def test_compose_without_the_host_variables_says_which_and_how(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORABENCH_")}
    done = subprocess.run(["docker", "compose", "--profile", "cpu", "config", "-q"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    if "is not a docker command" in done.stderr or "unknown command" in done.stderr:
        pytest.skip("no `docker compose` plugin; bash scripts/docker_engine.sh installs it")
    assert done.returncode != 0
    assert "is missing a value: set it with eval $(bash scripts/host_env.sh)" in done.stderr
