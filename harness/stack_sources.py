"""Where a stack's pins come from, checked against its lockfile: the Pythons it has hashes for (`pythons`)
and, for pins PyPI does not serve (torch==2.13.0+cpu), the index that does (`index_url`) and each wheel's
hash per Python (`index_wheels`). Why: a lockfile that resolves only on a machine configured like ours
fails a stranger with "No matching distribution found"; these fields let `scripts/install.sh` pass the
index and refuse an unsupported Python at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Protocol


class Pin(Protocol):
    """A lockfile pin as harness.stacks reads it (that module imports this one, so no import back)."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def hashes(self) -> tuple[str, ...]: ...


# A wheel file name: name-version(-build)?-pythontag-abitag-platform.whl
WHEEL_RE = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(?:-\d[^-]*)?-(?P<py>[^-]+)-[^-]+-[^-]+\.whl$")
PYTHON_RE = re.compile(r"^3\.\d+$")


def cp_tag(python: str) -> str:
    """'3.12' -> 'cp312', the wheel tag of that CPython."""
    return "cp" + python.replace(".", "")


def check_sources(
    where: str,
    python: str,
    pythons: Sequence[str],
    index_url: str,
    index_wheels: Mapping[str, str],
    pins: Mapping[str, Pin],
) -> list[str]:
    """Problems, each naming the field, the value and the fix; empty when the fields agree with the lockfile."""
    problems = [
        f"{where}.pythons: {p!r} is not a Python version such as '3.12'"
        for p in pythons
        if not PYTHON_RE.match(p)
    ]
    if python not in pythons:
        problems.append(
            f"{where}.pythons: {list(pythons)} lacks {python!r}, the Python the lockfile is compiled for"
        )
    local = [pin for pin in pins.values() if "+" in pin.version]
    if local and not index_url:
        names = ", ".join(f"{p.name}=={p.version}" for p in local)
        problems.append(f"{where}.index_url: {names} is not on PyPI; name the index that serves it")
    problems += _check_wheels(where, index_wheels, pins)
    for pin in local:
        for version in pythons:
            prefix = f"{pin.name.replace('-', '_')}-{pin.version}-{cp_tag(version)}-"
            if not any(wheel.lower().startswith(prefix) for wheel in index_wheels):
                problems.append(
                    f"{where}.index_wheels: no {prefix}*.whl for {pin.name}=={pin.version} on Python {version}; "
                    f"add its hash, or drop {version!r} from pythons"
                )
    return problems


def _check_wheels(where: str, index_wheels: Mapping[str, str], pins: Mapping[str, Pin]) -> list[str]:
    problems: list[str] = []
    for wheel, digest in index_wheels.items():
        match = WHEEL_RE.match(wheel)
        if match is None:
            problems.append(f"{where}.index_wheels: {wheel!r} is not a wheel file name")
            continue
        name = re.sub(r"[-_.]+", "-", match["name"]).lower()
        pin = pins.get(name)
        if pin is None or pin.version != match["version"]:
            problems.append(f"{where}.index_wheels: {wheel} is not pinned by the lockfile")
        elif digest not in pin.hashes:
            problems.append(
                f"{where}.index_wheels: {wheel}'s {digest} is not among the lockfile's hashes for {name}; "
                "add it there (or correct it here)"
            )
    return problems
