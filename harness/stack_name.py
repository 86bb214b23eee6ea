"""What a run's stack is called when none is given: $LORABENCH_STACK (the images set it); else the pinned
stack whose lockfile the installed packages match exactly (`make setup`'s venv is `cpu`); else a label
from torch and its device runtime, e.g. `venv-torch2.11.0-cuda13.0` (never `cpu` for an unpinned CUDA or
ROCm torch). Torch is read through its version file, never imported (`harness.stacks.read_torch_build`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import metadata

from harness import settings
from harness.errors import UserError
from harness.stacks import Stack, load_stacks, read_torch_build, verify_environment

UNPINNED_PREFIX = "venv"


def unpinned_label(torch_version: str | None, cuda: str | None, hip: str | None) -> str:
    """`venv-torch<version>-<runtime>`: cpu, cuda<version>, or rocm<version> (the ROCm release torch names
    in its local version, `2.9.1+rocm7.2.4`, else HIP's major.minor)."""
    if torch_version is None:
        return f"{UNPINNED_PREFIX}-no-torch"
    public, _, local = torch_version.partition("+")
    if hip:
        rocm = local.removeprefix("rocm") if local.startswith("rocm") else ".".join(hip.split(".")[:2])
        runtime = f"rocm{rocm}"
    elif cuda:
        runtime = f"cuda{cuda}"
    else:
        runtime = "cpu"
    return f"{UNPINNED_PREFIX}-torch{public}-{runtime}"


def _table() -> dict[str, Stack]:
    try:
        return load_stacks()
    except UserError:  # an install without the lockfiles folder: nothing pinned to match
        return {}


def matching_stack(stacks: Mapping[str, Stack]) -> str | None:
    """The pinned stack the installed packages are exactly (every pin, the accelerator), if any."""
    for name, stack in stacks.items():
        try:
            if not verify_environment(stack):
                return name
        except UserError:  # a lockfile it cannot read matches nothing
            continue
    return None


def _installed_torch_label() -> str:
    try:
        build = read_torch_build(metadata.distribution("torch"))
    except metadata.PackageNotFoundError:
        return unpinned_label(None, None, None)
    return unpinned_label(build.version, build.cuda, build.hip)


@cache
def _detected() -> str:
    # Cached: one look per process (about 0.6 s: every lockfile against the installed metadata).
    return matching_stack(_table()) or _installed_torch_label()


def default_stack(env: Mapping[str, str] | None = None) -> str:
    """The stack a run is recorded under when none is named (see the module's docstring)."""
    return settings.STACK.get(env) or _detected()


def is_pinned(name: str) -> bool:
    """Whether `name` is a stack of the table (a lockfile and image pin it), not a label of a venv."""
    return name in _table()
