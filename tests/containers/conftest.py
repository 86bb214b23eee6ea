"""A real Docker engine, the real lorabench:cpu image, real compose services, real host processes and traffic.

Skips, naming the fix, when no engine answers or the image is not built: CI (.ci/run) starts dockerd
(scripts/docker_engine.sh) and builds the image (scripts/build_image.sh cpu) before `make test`.
The containers run as uid/gid 4242, a user that exists nowhere, so ownership on the host is checked
against someone other than the root who runs the tests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "lorabench:cpu"
UID = GID = 4242


def _docker(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="session")
def engine() -> None:
    if shutil.which("docker") is None:
        pytest.skip("no docker client; CI installs and starts an engine with scripts/docker_engine.sh")
    if _docker("info").returncode != 0:
        pytest.skip(
            "no Docker engine answers `docker info`; start one with: bash scripts/docker_engine.sh (as root)"
        )
    if _docker("compose", "version").returncode != 0:
        pytest.skip("no `docker compose` plugin; bash scripts/docker_engine.sh installs it")


@pytest.fixture(scope="session")
def cpu_image(engine: None) -> dict[str, str]:
    """The image's id and labels; skips when it is not built."""
    inspect = _docker("image", "inspect", IMAGE)
    if inspect.returncode != 0:
        pytest.skip(f"{IMAGE} is not built: bash scripts/build_image.sh cpu (CI builds it before the tests)")
    info = json.loads(inspect.stdout)[0]
    return {"id": info["Id"], **(info["Config"].get("Labels") or {})}


@dataclass(frozen=True)
class HostDirs:
    root: Path
    results: Path
    reports: Path
    hf: Path
    cache: Path
    data: Path  # a small JSONL the test writes (the shared rows stay outside the repo)


ROWS = [
    {"question": f"What is the name when the year is {1990 + i}?", "context": "CREATE TABLE t (name VARCHAR, year VARCHAR)",
     "answer": f'SELECT name FROM t WHERE year = "{1990 + i}"'}
    for i in range(40)
]  # fmt: skip


@pytest.fixture
def host_dirs(tmp_path: Path) -> HostDirs:
    tmp_path.chmod(0o755)  # the container's uid must be able to reach the mounted folders
    data = tmp_path / "data" / "rows.jsonl"
    data.parent.mkdir()
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return HostDirs(
        tmp_path, tmp_path / "results", tmp_path / "reports", tmp_path / "hf", tmp_path / "cache", data
    )


def host_env(dirs: HostDirs, image_digest: str = "") -> dict[str, str]:
    """The environment scripts/host_env.sh gives, for uid/gid 4242 (it creates and hands over the folders)."""
    env = {
        **os.environ,
        "LORABENCH_UID": str(UID), "LORABENCH_GID": str(GID),
        "LORABENCH_RESULTS_DIR": str(dirs.results), "LORABENCH_REPORTS_DIR": str(dirs.reports),
        "HF_HOME": str(dirs.hf), "LORABENCH_CACHE": str(dirs.cache), "LORABENCH_DATA": str(dirs.data),
    }  # fmt: skip
    out = subprocess.run(
        ["bash", "-c", 'eval "$(bash scripts/host_env.sh)" && env -0'],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    exported = dict(item.split("=", 1) for item in out.stdout.split("\0") if "=" in item)
    if image_digest:
        exported["LORABENCH_IMAGE_DIGEST_CPU"] = image_digest
    return exported


def compose_run(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`docker compose --profile cpu run --rm ARGS` from the repository, as a maintainer types it."""
    return subprocess.run(
        ["docker", "compose", "--profile", "cpu", "run", "--rm", "--no-deps", "-T", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def owners(folder: Path) -> set[tuple[int, int]]:
    return {(p.stat().st_uid, p.stat().st_gid) for p in folder.rglob("*")}
