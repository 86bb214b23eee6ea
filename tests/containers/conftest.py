"""A real Docker engine, the real lorabench:cpu image, real compose services, real host processes and traffic.

Skips, naming the fix, when no engine answers or the image is not built: CI (.ci/run) starts dockerd
(scripts/docker_engine.sh) and builds the image (scripts/build_image.sh cpu) before `make test`.
The containers run as uid/gid 4242, a user that exists nowhere, so ownership on the host is checked
against someone other than the root who runs the tests.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from containerlib import IMAGE, ROWS, HostDirs, docker


@pytest.fixture(scope="session")
def engine() -> None:
    if shutil.which("docker") is None:
        pytest.skip("no docker client; CI installs and starts an engine with scripts/docker_engine.sh")
    if docker("info").returncode != 0:
        pytest.skip(
            "no Docker engine answers `docker info`; start one with: bash scripts/docker_engine.sh (as root)"
        )
    if docker("compose", "version").returncode != 0:
        pytest.skip("no `docker compose` plugin; bash scripts/docker_engine.sh installs it")


@pytest.fixture(scope="session")
def cpu_image(engine: None) -> dict[str, str]:
    """The image's id and labels; skips when it is not built."""
    inspect = docker("image", "inspect", IMAGE)
    if inspect.returncode != 0:
        pytest.skip(f"{IMAGE} is not built: bash scripts/build_image.sh cpu (CI builds it before the tests)")
    info = json.loads(inspect.stdout)[0]
    return {"id": info["Id"], **(info["Config"].get("Labels") or {})}


@pytest.fixture
def host_dirs(tmp_path: Path) -> HostDirs:
    tmp_path.chmod(0o755)  # the container's uid must be able to reach the mounted folders
    data = tmp_path / "data" / "rows.jsonl"
    data.parent.mkdir()
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return HostDirs(
        tmp_path, tmp_path / "results", tmp_path / "reports", tmp_path / "hf", tmp_path / "cache", data
    )
