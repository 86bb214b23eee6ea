"""Helpers of the container tests, importable under a name no other test folder uses (every folder's
conftest is `conftest`, so `from conftest import` depends on which one pytest imported last)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "lorabench:cpu"
UID = GID = 4242


def docker(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)


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
