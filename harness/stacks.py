"""Stacks: the table in `lockfiles/stacks.toml`, its lockfiles, and a check of the running environment
against one of them.

Not covered: building images or installing (that is `scripts/install.sh`), and GPU probing: `verify`
reads installed metadata and files only, so it works in an image build with no GPU.
"""

from __future__ import annotations

import re
import sys
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from harness import settings
from harness.errors import ConfigError, UserError
from harness.stack_sources import check_sources

DIGEST_RE = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")
# A requirement line of a uv/pip-compile lockfile: `name==version \` (hashes follow on their own lines).
PIN_RE = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(?P<version>[^\s;\\]+)")
HASH_RE = re.compile(r"--hash=(?P<hash>sha256:[0-9a-f]{64})")


class Stack(BaseModel):
    """One row of the stacks table. Paths are relative to the lockfiles folder."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str
    python: str
    platform: str
    accelerator: Literal["rocm", "cuda", "cpu"]
    torch: Literal["base-image", "lockfile"]
    torch_version: str
    input: str
    lockfile: str
    overrides: str | None = None
    find_links: tuple[str, ...] = ()
    pythons: tuple[str, ...] = ()  # empty: (python,), the lockfile's own
    pythons_note: str = ""  # said in install.sh's refusal of another Python: why it has no hashes
    index_url: str = ""
    index_wheels: dict[str, str] = {}
    index_wheels_source: str = ""
    base_image: str
    digest_verified: bool
    digest_source: str
    extras: tuple[str, ...] = ()

    @property
    def supported_pythons(self) -> tuple[str, ...]:
        """The Python versions the lockfile has hashes for: scripts/install.sh refuses any other."""
        return self.pythons or (self.python,)


@dataclass(frozen=True)
class Pin:
    """One pinned distribution in a lockfile."""

    name: str
    version: str
    hashes: tuple[str, ...]


@dataclass(frozen=True)
class LockDiff:
    """What changes from lockfile `a` to lockfile `b`, by normalised distribution name."""

    added: tuple[Pin, ...]
    removed: tuple[Pin, ...]
    changed: tuple[tuple[str, str, str], ...]  # (name, version in a, version in b)

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


@dataclass(frozen=True)
class Problem:
    """One way the running environment differs from what its stack promises."""

    severity: Literal["error", "warning"]
    package: str
    message: str


def normalize(name: str) -> str:
    """PEP 503 name: lockfiles say `typing-extensions`, metadata may say `typing_extensions`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def lockfiles_dir() -> Path:
    """The lockfiles folder: $LORABENCH_LOCKFILES, else next to the package (a checkout or the image's
    /opt/lorabench copy), else ./lockfiles."""
    if folder := settings.LOCKFILES.get():
        return folder
    beside_package = Path(__file__).resolve().parent.parent / "lockfiles"
    if (beside_package / "stacks.toml").is_file():
        return beside_package
    return Path.cwd() / "lockfiles"


def load_stacks(directory: Path | None = None) -> dict[str, Stack]:
    """Read and validate the whole table; every problem is reported at once (ConfigError)."""
    directory = directory or lockfiles_dir()
    table_path = directory / "stacks.toml"
    if not table_path.is_file():
        raise UserError(
            f"stacks table {table_path} not found; set LORABENCH_LOCKFILES to the lockfiles folder"
        )
    try:
        raw = tomllib.loads(table_path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{table_path}: not valid TOML: {exc}") from exc
    problems: list[str] = []
    stacks: dict[str, Stack] = {}
    for name, row in raw.get("stacks", {}).items():
        try:
            stack = Stack(name=name, **row)
        except ValidationError as exc:
            for err in exc.errors():
                field = ".".join(str(p) for p in err["loc"])
                problems.append(f"stacks.{name}.{field}: {err['msg']}, got {err.get('input')!r}")
            continue
        problems.extend(_check_stack(stack, directory))
        stacks[name] = stack
    if not stacks and not problems:
        problems.append("stacks: the table has no [stacks.NAME] entries")
    if problems:
        raise ConfigError(str(table_path), problems)
    return stacks


def _check_stack(stack: Stack, directory: Path) -> list[str]:
    where = f"stacks.{stack.name}"
    problems = [
        f"{where}.{field}: file {value!r} not found in {directory}"
        for field, value in (
            ("input", stack.input),
            ("lockfile", stack.lockfile),
            ("overrides", stack.overrides),
        )
        if value is not None and not (directory / value).is_file()
    ]
    if stack.base_image and not DIGEST_RE.match(stack.base_image):
        problems.append(
            f"{where}.base_image: must be pinned as name:tag@sha256:<64 hex>, got {stack.base_image!r}"
        )
    if stack.accelerator != "cpu" and not stack.base_image:
        problems.append(
            f"{where}.base_image: a {stack.accelerator} stack needs a base image pinned by digest"
        )
    if stack.torch == "base-image" and stack.overrides is None:
        problems.append(
            f"{where}.overrides: torch comes from the base image, so an overrides file must keep it out"
        )
    if not problems:
        problems += check_sources(
            where,
            stack.python,
            stack.supported_pythons,
            stack.index_url,
            stack.index_wheels,
            parse_lockfile(directory / stack.lockfile),
        )
    return problems


def parse_lockfile(path: Path) -> dict[str, Pin]:
    """Pins of a hashed lockfile, keyed by normalised name. Raises UserError on a line it cannot read,
    so a hand-edited lockfile never passes half-read."""
    entries: list[tuple[str, str, list[str]]] = []  # hashes arrive on the lines after their pin
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("--hash="):
            if not entries:
                raise UserError(f"{path}:{number}: a hash with no requirement before it")
            entries[-1][2].extend(HASH_RE.findall(stripped))
        elif stripped.startswith("-"):
            continue  # pip options such as --find-links
        elif match := PIN_RE.match(stripped):
            entries.append((normalize(match["name"]), match["version"], HASH_RE.findall(stripped)))
        else:
            raise UserError(
                f"{path}:{number}: not a `name==version` pin: {stripped!r}; recompile with lockfiles/compile.sh"
            )
    return {name: Pin(name, version, tuple(hashes)) for name, version, hashes in entries}


def diff_lockfiles(a: Path, b: Path) -> LockDiff:
    """Added, removed and re-versioned distributions from lockfile `a` to lockfile `b`."""
    pins_a, pins_b = parse_lockfile(a), parse_lockfile(b)
    return LockDiff(
        added=tuple(pins_b[n] for n in sorted(pins_b.keys() - pins_a.keys())),
        removed=tuple(pins_a[n] for n in sorted(pins_a.keys() - pins_b.keys())),
        changed=tuple(
            (n, pins_a[n].version, pins_b[n].version)
            for n in sorted(pins_a.keys() & pins_b.keys())
            if pins_a[n].version != pins_b[n].version
        ),
    )


@dataclass(frozen=True)
class TorchBuild:
    """What torch was built for, read from `torch/version.py` without importing torch."""

    version: str
    cuda: str | None
    hip: str | None


def read_torch_build(dist: metadata.Distribution) -> TorchBuild:
    version_py = Path(str(dist.locate_file("torch/version.py")))
    text = version_py.read_text() if version_py.is_file() else ""

    def field(key: str) -> str | None:
        # version.py writes e.g. `cuda: Optional[str] = None` or `hip: Optional[str] = '7.2.26015'`.
        match = re.search(rf"^{key}\s*(?::[^=]*)?=\s*(?:'([^']*)'|\"([^\"]*)\"|None)", text, re.MULTILINE)
        return (match.group(1) or match.group(2)) if match and (match.group(1) or match.group(2)) else None

    return TorchBuild(version=dist.version, cuda=field("cuda"), hip=field("hip"))


def _installed(search_path: list[str] | None) -> tuple[dict[str, metadata.Distribution], dict[str, str]]:
    """The installed distributions and their versions by normalized name (in `search_path`, default sys.path)."""
    return _scan(tuple(search_path if search_path is not None else sys.path))


@cache
def _scan(search_path: tuple[str, ...]) -> tuple[dict[str, metadata.Distribution], dict[str, str]]:
    # Once per process and path, each package's metadata read once: the doctor compares every stack's
    # lockfile against what is installed (6 scans and a read per pin took 1.0 s of its 6 s on the Xeon).
    found: dict[str, metadata.Distribution] = {}
    versions: dict[str, str] = {}
    for dist in metadata.distributions(path=list(search_path)):
        meta = dist.metadata
        name = normalize(meta["Name"] or "")
        if name not in found:
            found[name], versions[name] = dist, meta["Version"]
    return found, versions


def _files(dist: metadata.Distribution) -> Iterable[str]:
    return (str(f) for f in dist.files or ())


def verify_environment(
    stack: Stack, *, directory: Path | None = None, search_path: list[str] | None = None
) -> list[Problem]:
    """Compare installed distributions (in `search_path`, default sys.path) with the stack's lockfile and
    its accelerator. Empty list: the environment is the stack."""
    directory = directory or lockfiles_dir()
    installed, versions = _installed(search_path)
    problems: list[Problem] = []
    for name, pin in parse_lockfile(directory / stack.lockfile).items():
        version = versions.get(name)
        if version is None:
            problems.append(
                Problem("error", name, f"{name}=={pin.version} is in {stack.lockfile} but not installed")
            )
        elif version != pin.version:
            problems.append(
                Problem("error", name, f"installed {version}, {stack.lockfile} pins {pin.version}")
            )
    problems.extend(_check_accelerator(stack, installed))
    return problems


def _check_accelerator(stack: Stack, installed: dict[str, metadata.Distribution]) -> list[Problem]:
    torch_dist = installed.get("torch")
    if torch_dist is None:
        return [
            Problem(
                "error",
                "torch",
                f"torch is not installed; stack {stack.name} takes it from its {stack.torch}",
            )
        ]
    build = read_torch_build(torch_dist)
    problems: list[Problem] = []
    if not build.version.startswith(stack.torch_version):
        problems.append(
            Problem(
                "warning", "torch", f"torch {build.version}, stack {stack.name} expects {stack.torch_version}"
            )
        )
    if stack.accelerator == "rocm" and build.hip is None:
        problems.append(
            Problem(
                "error",
                "torch",
                f"torch {build.version} is not a HIP build (cuda={build.cuda}); "
                "a ROCm stack must keep the base image's torch: reinstall the image, never `pip install torch`",
            )
        )
    if stack.accelerator == "cuda" and build.cuda is None:
        problems.append(
            Problem("error", "torch", f"torch {build.version} is not a CUDA build (hip={build.hip})")
        )
    if build.hip is not None:
        problems.extend(_check_hip_companions(installed))
    bnb = installed.get("bitsandbytes")
    if stack.accelerator in ("rocm", "cuda") and bnb is not None:
        backend = "rocm" if stack.accelerator == "rocm" else "cuda"
        if not any(re.search(rf"libbitsandbytes_{backend}\d*\.(so|dll|dylib)$", f) for f in _files(bnb)):
            problems.append(
                Problem(
                    "error",
                    "bitsandbytes",
                    f"bitsandbytes {bnb.version} has no {backend.upper()} backend "
                    f"library (libbitsandbytes_{backend}*.so); 4-bit loading will fail: install >= 0.50.2",
                )
            )
    return problems


def _check_hip_companions(installed: dict[str, metadata.Distribution]) -> list[Problem]:
    """Packages that silently break a HIP torch when pip pulls their CUDA builds from PyPI."""
    problems: list[Problem] = []
    triton = installed.get("triton")
    if triton is not None and "rocm" not in triton.version:
        # The image ships pytorch-triton-rocm (or a +rocm local version); PyPI's `triton` is built for the
        # CUDA torch of its release and overwrites the same `triton/` package directory.
        problems.append(
            Problem(
                "error",
                "triton",
                f"triton {triton.version} (the PyPI CUDA build) next to a HIP torch; "
                "uninstall it and reinstall the image's pytorch-triton-rocm",
            )
        )
    xformers = installed.get("xformers")
    if xformers is not None:
        problems.append(
            Problem(
                "warning",
                "xformers",
                f"xformers {xformers.version} from PyPI is CUDA-only; with a HIP "
                "torch it fails to load its kernels: uninstall it (Unsloth runs without it on AMD)",
            )
        )
    return problems
