"""Each stack says where its pins come from and which Pythons it has hashes for, in agreement with its
lockfile; scripts/install.sh refuses another Python before pip starts, in one line naming the fix."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.stacks import load_stacks, parse_lockfile

ROOT = Path(__file__).resolve().parents[2]
LOCKFILES = ROOT / "lockfiles"
THIS_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"
CP311 = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"


def test_every_stack_names_its_pythons_and_the_cpu_stack_its_torch_index() -> None:
    raw = tomllib.loads((LOCKFILES / "stacks.toml").read_text())["stacks"]
    assert all(row["python"] in row["pythons"] for row in raw.values()), "each stack declares `pythons`"
    cpu = load_stacks(LOCKFILES)["cpu"]
    assert cpu.supported_pythons == ("3.11", "3.12")
    assert cpu.index_url == "https://download.pytorch.org/whl/cpu"
    torch = parse_lockfile(LOCKFILES / cpu.lockfile)["torch"]
    assert set(cpu.index_wheels.values()) == set(torch.hashes) and len(torch.hashes) == 2
    assert "not verified" in cpu.index_wheels_source, "an unverified hash is said to be one"


def _table_with(tmp_path: Path, old: str, new: str) -> Path:
    lockfiles = tmp_path / "lockfiles"
    shutil.copytree(LOCKFILES, lockfiles)
    table = (lockfiles / "stacks.toml").read_text()
    assert old in table
    (lockfiles / "stacks.toml").write_text(table.replace(old, new, 1))
    return lockfiles


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            'index_url = "https://download.pytorch.org/whl/cpu"\n',
            "",
            "stacks.cpu.index_url: torch==2.13.0+cpu",
        ),
        (
            'pythons = ["3.11", "3.12"]',
            'pythons = ["3.11", "3.12", "3.13"]',
            "no torch-2.13.0+cpu-cp313-*.whl",
        ),
        ('pythons = ["3.11", "3.12"]', 'pythons = ["3.12"]', "lacks '3.11', the Python the lockfile"),
        ("sha256:6746dbcb", "sha256:0746dbcb", f"{CP311}'s sha256:0746dbcb"),
        (CP311, CP311.replace("2.13.0", "2.12.0"), "is not pinned by the lockfile"),
    ],
    ids=["no-index", "python-without-hash", "lockfile-python-missing", "hash-not-in-lockfile", "stale-wheel"],
)
def test_a_table_that_disagrees_with_its_lockfile_is_refused(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    lockfiles = _table_with(tmp_path, old, new)
    with pytest.raises(ConfigError) as err:
        load_stacks(lockfiles)
    assert expected in str(err.value)


def _install(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(root / "scripts/install.sh"), *args],
        env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable, "PIP_NO_INDEX": "1"},
        capture_output=True,
        text=True,
        check=False,
    )


def test_install_refuses_a_python_without_hashes_before_pip(tmp_path: Path) -> None:
    _table_with(tmp_path, 'pythons = ["3.11", "3.12"]', 'pythons = ["3.99"]')
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts/install.sh", tmp_path / "scripts/install.sh")
    done = _install(tmp_path, "cpu")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"stack cpu has hashes for CPython 3.99 only, not cpython {THIS_PYTHON}" in lines[0]
    assert "make setup PYTHON=python3.99" in lines[0] and "docker compose run --rm bench-cpu" in lines[0]
    assert "PyTorch's index is unreachable" in lines[0], "the table's note says why there are no hashes"
    assert not done.stdout, "pip never started"


def test_install_accepts_the_pythons_it_has_hashes_for() -> None:
    done = _install(ROOT, "--check-python", "cpu")
    assert done.returncode == 0 and not done.stderr
