"""Lockfiles proven where they are used: every pin downloaded for the stack's Python and platform with its
hash checked (`pip download --no-deps --only-binary=:all: --require-hashes`), then installed from those files
alone into a fresh venv when that Python is on this machine. What cannot be had is named, never skipped: a
"base-image" stack's torch comes from the image; a missing Python means no install. A failing pin is named
with pip's last error line (one call per pin only after the whole-lockfile call failed).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.stacks import Pin, Stack, parse_lockfile


@dataclass(frozen=True)
class PinFailure:
    package: str
    message: str


@dataclass(frozen=True)
class DownloadResult:
    stack: str
    pins: int
    files: tuple[str, ...]
    failures: tuple[PinFailure, ...]
    command: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.failures


@dataclass(frozen=True)
class InstallResult:
    python: str | None  # the interpreter used, None when the machine has none of the stack's version
    ok: bool
    message: str


def pip_platforms(platform: str) -> list[str]:
    """uv's `x86_64-manylinux_2_28` as the tags pip must be told one by one (pip matches them exactly):
    every manylinux glibc version up to the stack's, newest first, and the legacy aliases."""
    arch, _, libc = platform.partition("-")
    if not libc.startswith("manylinux_2_"):
        return [f"{libc}_{arch}"]
    top = int(libc.removeprefix("manylinux_2_"))
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(top, 4, -1)]
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    return tags + [f"{name}_{arch}" for minor, name in legacy.items() if minor <= top]


def download_command(stack: Stack, requirements: Path, dest: Path, python: str = sys.executable) -> list[str]:
    command = [
        python,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--require-hashes",
        "--python-version",
        stack.python,
        "--implementation",
        "cp",
        "--dest",
        str(dest),
        "-r",
        str(requirements),
    ]
    for tag in pip_platforms(stack.platform):
        command += ["--platform", tag]
    for folder in stack.find_links:
        if Path(folder).is_dir():
            command += ["--find-links", folder]
    return command


def _last_error(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip() and "is ignored" not in line]
    errors = [line for line in lines if line.startswith("ERROR")]
    return (errors or lines or ["pip failed without a message"])[-1][:300]


def _pin_file(pin: Pin, folder: Path) -> Path:
    path = folder / f"{pin.name}.txt"
    path.write_text(f"{pin.name}=={pin.version} " + " ".join(f"--hash={h}" for h in pin.hashes) + "\n")
    return path


def download_stack(stack: Stack, directory: Path, dest: Path) -> DownloadResult:
    """Download every pin; on failure, name each pin that fails."""
    lockfile = directory / stack.lockfile
    pins = parse_lockfile(lockfile)
    dest.mkdir(parents=True, exist_ok=True)
    command = download_command(stack, lockfile, dest)
    env = {
        **os.environ,
        "PIP_CONSTRAINT": "",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }  # a host's cap is not the stack's
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    failures: list[PinFailure] = []
    if done.returncode != 0:
        with tempfile.TemporaryDirectory() as scratch:
            for pin in pins.values():
                one = subprocess.run(
                    download_command(stack, _pin_file(pin, Path(scratch)), dest),
                    capture_output=True,
                    text=True,
                    env=env,
                    check=False,
                )
                if one.returncode != 0:
                    failures.append(
                        PinFailure(f"{pin.name}=={pin.version}", _last_error(one.stdout + one.stderr))
                    )
        if not failures:  # the whole call failed but no single pin does: say what pip said
            failures.append(PinFailure("(lockfile)", _last_error(done.stdout + done.stderr)))
    files = tuple(sorted(p.name for p in dest.iterdir() if p.suffix == ".whl"))
    return DownloadResult(stack.name, len(pins), files, tuple(failures), tuple(command))


def find_python(version: str) -> str | None:
    """An interpreter of `version` on this machine that really runs (a pyenv shim may only print an error)."""
    candidates = [
        shutil.which(f"python{version}"),
        *sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}"))),
    ]
    if sys.version_info[:2] == tuple(int(p) for p in version.split(".")):
        candidates.append(sys.executable)  # last: it may be a venv's
    for candidate in candidates:
        if not candidate:
            continue
        probe = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


def install_stack(stack: Stack, directory: Path, wheels: Path, venv: Path) -> InstallResult:
    """A fresh venv of the stack's Python, the lockfile installed from `wheels` alone, hashes required."""
    python = find_python(stack.python)
    if python is None:
        return InstallResult(None, False, f"no Python {stack.python} on this machine: install not tried")
    if venv.exists():
        shutil.rmtree(venv)
    made = subprocess.run([python, "-m", "venv", str(venv)], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        return InstallResult(python, False, f"venv: {_last_error(made.stdout + made.stderr)}")
    command = [
        str(venv / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "-q",
        "--no-index",
        "--no-deps",
        "--require-hashes",
        "--only-binary=:all:",
        "--find-links",
        str(wheels),
        "-r",
        str(directory / stack.lockfile),
    ]
    env = {**os.environ, "PIP_CONSTRAINT": "", "PIP_FIND_LINKS": "", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        return InstallResult(python, False, f"pip install: {_last_error(done.stdout + done.stderr)}")
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    count = sum(1 for line in listed.stdout.splitlines() if "==" in line)
    return InstallResult(python, True, f"{count} distributions installed in a fresh venv of {python}")


def not_here(stack: Stack, directory: Path) -> list[str]:
    """What this check cannot reach, each with where it comes from instead."""
    missing = []
    if stack.torch == "base-image":
        kept = (
            [
                line.strip()
                for line in (directory / (stack.overrides or "")).read_text().splitlines()
                if line.strip() and not line.startswith("#")
            ]
            if stack.overrides
            else ["torch"]
        )
        missing.append(
            f"{', '.join(kept)}: from the base image {stack.base_image} (not in the lockfile; no registry reachable here)"
        )
    missing += [
        f"{extra}: an extra installed apart from the lockfile (--no-deps, unhashed)" for extra in stack.extras
    ]
    return missing
