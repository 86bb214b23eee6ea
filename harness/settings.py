"""Every `LORABENCH_*` environment variable, declared once: its name, type, default, meaning, and who
sets it. Code reads a variable only through its declaration (`settings.MEM_CAP.get()`);
`tests/test_settings.py` holds every module, the README, compose.yaml, the Dockerfiles, the Makefile,
.ci and scripts/ to that. `lorabench doctor --settings` lists them with their values now.

Values are read at call time, never frozen at import. Unset and empty mean the default. A value that
cannot be read is a `UserError` naming the variable, the value and its form, raised where the value is
needed: a bad variable never stops a command that does not use it.

Why not pydantic-settings: it reads every variable of the prefix at once (a bad `LORABENCH_NODE` would
stop `lorabench report`), a read costs 2.2-3.7 ms against 1 µs here (`dev/bench_settings.py`), it has no
place for "who sets it", and adding it would change every stack's recorded lockfile hash.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, TypeVar

from pydantic import TypeAdapter, ValidationError

from harness.errors import UserError

T = TypeVar("T")
PREFIX = "LORABENCH_"

# Who puts the variable in the environment: the user; the image (Dockerfile ENV or compose's
# `environment:`); scripts/host_env.sh, for compose on the host; the harness, for its own child
# processes (never set these by hand); the project's own tests.
SetBy = Literal["you", "image", "host_env.sh", "harness", "tests"]

SIZE_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
SIZE_FORM = "bytes or a number with k, m, g (e.g. 2g)"


def parse_size(text: str) -> int:
    """`2g`, `512MiB`, `1.5G`, `4096` → bytes (binary units). ValueError when it is not a size above zero."""
    body = text.strip().lower().removesuffix("b").removesuffix("i")
    try:
        value = int(float(body[:-1]) * SIZE_UNITS[body[-1]]) if body[-1] in SIZE_UNITS else int(body)
    except (ValueError, IndexError, OverflowError):
        raise ValueError(f"{text!r} is not a size; use {SIZE_FORM}") from None
    if value <= 0:
        raise ValueError(f"{text!r} is not a size above zero; use e.g. 2g, or unset it")
    return value


def _adapted(kind: type[T], form: str) -> Callable[[str], T]:
    adapter = TypeAdapter(kind)

    def parse(text: str) -> T:
        try:
            return adapter.validate_python(text.strip())
        except ValidationError:
            raise ValueError(f"{text!r} is not {form}") from None

    return parse


def _positive_seconds(text: str) -> float:
    value = _adapted(float, "a positive number of seconds")(text)
    if not value > 0:
        raise ValueError(f"{text!r} is not a positive number of seconds")
    return value


def _path(text: str) -> Path:
    return Path(text.strip()).expanduser()


def _text(text: str) -> str:
    return text.strip()


# A stack names a folder of the results (results/<stack>/…): what starts with a dot ('.work', '..')
# filed records where the sweep sets work folders aside, or outside the results folder (issue 39).
STACK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$")


def stack_name(text: str) -> str:
    name = text.strip()
    if not STACK_NAME.match(name):
        raise ValueError(
            f"{name!r} cannot name a stack: give letters, digits and . _ + - (at most 100), such as cpu or cuda13"
        )
    return name


_flag = _adapted(bool, "1 or 0 (true/false, yes/no, on/off)")
_count = _adapted(int, "a whole number")


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One environment variable. `default` is written as a user would write the value (it goes through
    `parse` like one); `default_note` says where the default comes from when code computes it."""

    name: str
    parse: Callable[[str], T]
    meaning: str
    set_by: SetBy
    default: str | None = None
    default_note: str = ""
    read_by: str = "lorabench"  # or the script/file that reads it, for those lorabench never reads
    example: str = ""

    def raw(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The text set now (stripped), or None when unset or empty."""
        value = (os.environ if environ is None else environ).get(self.name, "").strip()
        return value or None

    def is_set(self, environ: Mapping[str, str] | None = None) -> bool:
        return self.raw(environ) is not None

    def get(self, environ: Mapping[str, str] | None = None) -> T | None:
        """The value now (from `environ`, default os.environ), else the default; None when neither."""
        raw = self.raw(environ)
        if raw is None:
            return None if self.default is None else self.parse(self.default)
        try:
            return self.parse(raw)
        except ValueError as exc:
            problem = str(exc)
            if "e.g." not in problem and self.example:
                problem += f"; set e.g. {self.name}={self.example}"
            if "unset" not in problem:
                problem += ", or unset it"
            raise UserError(f"${self.name}: {problem}") from None

    def value(self, environ: Mapping[str, str] | None = None) -> T:
        """`get` for a variable that has a default: never None."""
        found = self.get(environ)
        if found is None:
            raise RuntimeError(f"{self.name} has no default; use get() and handle None")
        return found

    def shown(self, environ: Mapping[str, str] | None = None) -> str:
        """The value as `lorabench doctor --settings` shows it: set, or the default and where it comes from."""
        raw = self.raw(environ)
        if raw is not None:
            return raw
        default = " ".join(filter(None, (self.default, self.default_note and f"({self.default_note})")))
        return f"unset: default {default}" if default else "unset"


REGISTRY: dict[str, Setting[object]] = {}


def declare(name: str, parse: Callable[[str], T], meaning: str, set_by: SetBy, **extra: str) -> Setting[T]:
    if not name.startswith(PREFIX):
        raise ValueError(f"{name}: a lorabench variable's name starts with {PREFIX}")
    if name in REGISTRY:
        raise ValueError(f"{name}: declared twice")
    setting = Setting(name, parse, meaning, set_by, **extra)
    REGISTRY[name] = setting  # type: ignore[assignment]
    return setting


def snapshot(declared: Iterable[Setting[object]], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The set ones of `declared` as text, name → value: what a report records of the environment."""
    return {s.name: raw for s in declared if (raw := s.raw(environ)) is not None}


def lookup(name: str) -> Setting[object]:
    """The declaration of `name` (KeyError: not declared)."""
    return REGISTRY[name]


# ---- What you set ------------------------------------------------------------------------------------
DATA = declare(
    "LORABENCH_DATA",
    _text,
    "the task's data: a local .jsonl/.json/.parquet or hub id, instead of each setup's own",
    "you",
    example="/data/train.jsonl",
)


def data_source_sets() -> list[str]:
    """$LORABENCH_DATA as a `--set` for the scripts that build a setup themselves; none when it is unset, so
    the setup's own source (the hub) is read and a missing copy fails with the loader's fix, not as 'None'."""
    return [f"data.source={value}"] if (value := DATA.get()) else []


CACHE = declare(
    "LORABENCH_CACHE",
    _path,
    "lorabench's own cache (dequantized models, converted checkpoints, and bytecode where Python may not write it)",
    "you",
    default="~/.cache/lorabench",
)
STACK = declare(
    "LORABENCH_STACK",
    stack_name,
    "the stack name runs are recorded under (the images set it)",
    "image",
    default_note="cpu where a command needs one",
)
INDEX_URL = declare(
    "LORABENCH_INDEX_URL",
    _text,
    "the index scripts/install.sh fetches a stack's local-version pins from (a mirror of PyTorch's); "
    "'none' leaves it to pip's own configuration",
    "you",
    default_note="the stack's index_url in lockfiles/stacks.toml",
)
LOCK_DIR = declare(
    "LORABENCH_LOCK_DIR",
    _path,
    "where host-wide locks live (timed phases, model loads); share it between containers of one host",
    "you",
    default_note="the temp folder",
)
LOAD_LOCK = declare(
    "LORABENCH_LOAD_LOCK",
    _path,
    "the model-load lock file (ranks load one at a time)",
    "you",
    default_note="a file in the lock folder",
)
MEM_CAP = declare(
    "LORABENCH_MEM_CAP",
    parse_size,
    "memory cap on the trainer (cgroup, else RLIMIT_DATA); unset: no cap",
    "you",
    example="4g",
)
MEMORY_FLOOR = declare(
    "LORABENCH_MEMORY_FLOOR",
    parse_size,
    "available memory below which the watchdog kills the trainer",
    "you",
    default="512m",
    example="1g",
)
MIN_FREE = declare(
    "LORABENCH_MIN_FREE",
    parse_size,
    "free disk a run needs in its results folder",
    "you",
    default="256m",
    example="1g",
)
# Switches removed once their measurement decided (issue #37): the path that won is the only one. The
# measurements that decided them still name them (README, benchmarks/gpu/); setting one does nothing.
RETIRED = {
    "LORABENCH_ANSWER_LOSS": "the answer-token loss is the only path (CPU step 1.055x and 1.079x faster)",
    "LORABENCH_LEAN_LORA": "the lean LoRA forward is the only path (H200 graphed step 30.9/32.0 against 35.4/35.6 ms)",
    "LORABENCH_METADATA_CACHE": "the trainer always caches packages_distributions() (5.1 s a seed on the H200)",
    "LORABENCH_SCORING_WORKER": "the scoring worker runs where 4 or more CPUs are spare, never elsewhere",
    "LORABENCH_BYTECODE_CACHE": "the trainer caches its bytecode wherever Python may not write it (8.0 s "
    "against 12.1-14.4 s of imports on the H200); set PYTHONPYCACHEPREFIX yourself to choose the folder",
    "LORABENCH_DEBUG": "pass --debug (anywhere on the command line) for the traceback behind an error",
    # Parent -> child state travels in the run plan (harness/run/plan.py), not the environment.
    "LORABENCH_CHECKPOINT_DIR": "the run plan's checkpoints",
    "LORABENCH_PROGRESS_FILE": "the run plan's progress_file",
}


def retired_set(environ: Mapping[str, str] | None = None) -> list[str]:
    """A sentence for each removed switch still set here, naming what replaced it: a user who set one to
    change a run is told that it no longer does (by every command, and by `lorabench doctor --settings`)."""
    environ = os.environ if environ is None else environ
    return [
        f"${name} is set but does nothing now: {instead}"
        for name, instead in RETIRED.items()
        if name in environ
    ]


GGUF_CONVERTER = declare(
    "LORABENCH_GGUF_CONVERTER",
    _path,
    "llama.cpp's convert_hf_to_gguf.py, for `lorabench export --gguf`",
    "you",
    default_note="found on PATH",
)
CPUINFO_FILE = declare(
    "LORABENCH_CPUINFO_FILE",
    _path,
    "a recorded /proc/cpuinfo text read instead of the host's (tests)",
    "you",
    default_note="/proc/cpuinfo",
)
LOCKFILES = declare(
    "LORABENCH_LOCKFILES",
    _path,
    "the folder with stacks.toml and the lockfiles",
    "image",
    default_note="the checkout's lockfiles/",
)
RDZV_ENDPOINT = declare(
    "LORABENCH_RDZV_ENDPOINT",
    _text,
    "HOST:PORT where the nodes of a several-node run meet (the lead's address, the same on every node)",
    "you",
    default_note="PET_RDZV_ENDPOINT",
    example="10.0.0.5:29400",
)
RDZV_ID = declare(
    "LORABENCH_RDZV_ID",
    _text,
    "the rendezvous id of a several-node run",
    "you",
    default_note="PET_RDZV_ID, else from setup, seed and stack",
)
RDZV_TIMEOUT = declare(
    "LORABENCH_RDZV_TIMEOUT",
    _positive_seconds,
    "seconds a node waits for the others at the rendezvous",
    "you",
    default="600",
    example="600",
)
NODE_LOST_AFTER = declare(
    "LORABENCH_NODE_LOST_AFTER",
    _positive_seconds,
    "seconds without a node's heartbeat before the lead calls it lost",
    "you",
    default="15",
    example="15",
)
NODE_END_WAIT = declare(
    "LORABENCH_NODE_END_WAIT",
    _positive_seconds,
    "seconds the lead waits for the other nodes' outcomes after its own trainer ended",
    "you",
    default="120",
    example="120",
)

# ---- What the images set (Dockerfile ENV, compose `environment:`) -------------------------------------
IMAGE = declare(
    "LORABENCH_IMAGE",
    _text,
    "this image's name (recorded; its presence means: inside a lorabench image)",
    "image",
)
IMAGE_DIGEST = declare(
    "LORABENCH_IMAGE_DIGEST", _text, "this image's id, passed by compose (an image cannot know it)", "image"
)
BASE_IMAGE = declare(
    "LORABENCH_BASE_IMAGE", _text, "the base image, pinned by digest (recorded, checked by doctor)", "image"
)
LOCKFILE = declare(
    "LORABENCH_LOCKFILE",
    _path,
    "the stack's lockfile, hashed into each record",
    "image",
    default_note="lockfiles/<stack>.txt",
)
GIT_SHA = declare(
    "LORABENCH_GIT_SHA",
    _text,
    "the commit the image was built from (recorded)",
    "image",
    default_note="asked of git",
)
GIT_DIRTY = declare(
    "LORABENCH_GIT_DIRTY",
    _flag,
    "whether that checkout had changes (recorded)",
    "image",
    default_note="asked of git",
)
REQUIRE_GPU = declare(
    "LORABENCH_REQUIRE_GPU",
    _text,
    "the accelerator the container demands: rocm or cuda",
    "image",
    default_note="the stack's, else the host's",
)
WRITABLE = declare(
    "LORABENCH_WRITABLE",
    _text,
    "colon-separated folders the service must be able to write",
    "image",
    read_by="scripts/container_checks.py",
)

# ---- What the harness sets for its own child processes (never by hand) ---------------------------------
PARENT = declare(
    "LORABENCH_PARENT",
    _text,
    "the run's parent process; the trainer ends itself when it is gone",
    "harness",
)
NODE = declare("LORABENCH_NODE", _count, "this node's index in a several-node run", "harness", default="0")

# ---- Read by compose, the scripts and the tests only (declared so no file names an unknown one) -------
_HOST_ENV = "compose.yaml"
for _name, _meaning in (
    ("LORABENCH_UID", "the user id the containers run as (yours)"),
    ("LORABENCH_GID", "the group id the containers run as (yours)"),
    ("LORABENCH_RENDER_GID", "the host's GID of the render group (the GPU nodes)"),
    ("LORABENCH_VIDEO_GID", "the host's GID of the video group"),
    ("LORABENCH_RESULTS_DIR", "the host folder mounted as the containers' results/"),
    ("LORABENCH_REPORTS_DIR", "the host folder mounted as the containers' reports-local/"),
    ("LORABENCH_HF_CACHE", "the host's Hugging Face cache, mounted"),
    ("LORABENCH_CACHE_DIR", "the host's lorabench cache, mounted"),
    ("LORABENCH_DATA_DIR", "the folder of $LORABENCH_DATA, mounted read-only at /data"),
    ("LORABENCH_DATA_IN_CONTAINER", "$LORABENCH_DATA's path inside the container"),
    ("LORABENCH_IMAGE_DIGEST_CPU", "the id of the cpu image built now"),
    ("LORABENCH_IMAGE_DIGEST_ROCM", "the id of the rocm image built now"),
    ("LORABENCH_IMAGE_DIGEST_CUDA", "the id of the cuda image built now"),
):
    declare(_name, _text, _meaning, "host_env.sh", read_by=_HOST_ENV)
for _name, _meaning, _reader in (
    ("LORABENCH_MEM_LIMIT", "the container's memory limit (compose mem_limit)", "compose.yaml"),
    (
        "LORABENCH_SETUPS_DIR",
        "your own setups folder, mounted for `bench-setups` (README: Add your own benchmark)",
        "compose.yaml",
    ),
    ("LORABENCH_BASE_TAG", "the tag of the base image scripts/base_image.sh builds", "scripts/base_image.sh"),
    (
        "LORABENCH_CI_DIR",
        "the CI's cache folder (debootstrap, dockerd log)",
        "scripts/base_image.sh, scripts/docker_engine.sh",
    ),
    (
        "LORABENCH_DOCKERFILE",
        "a Dockerfile to build with `docker build` instead of the stack's service",
        "scripts/build_image.sh",
    ),
    ("LORABENCH_TAG", "the tag of the image built from $LORABENCH_DOCKERFILE", "scripts/build_image.sh"),
    ("LORABENCH_WHEELS", "a wheel folder served to the image build", "scripts/build_image.sh"),
    ("LORABENCH_DEV", "where compose_run.sh looks for device nodes (default /dev)", "scripts/compose_run.sh"),
    (
        "LORABENCH_DRY_RUN",
        "1: compose_run.sh prints the docker command instead of running it",
        "scripts/compose_run.sh",
    ),
    ("LORABENCH_NO_BUILD", "1: exp_e.sh skips building the images", "scripts/exp_e.sh"),
    ("LORABENCH_EDITABLE", "0: install the project non-editable (images)", "scripts/install.sh"),
    ("LORABENCH_VERIFY", "0: skip install.sh's closing `lorabench stacks verify`", "scripts/install.sh"),
    ("LORABENCH_ONLY", "deps or project: install.sh installs only that part", "scripts/install.sh"),
    (
        "LORABENCH_SKIP_CHECKS",
        "1: the entrypoint skips doctor and the container checks",
        "scripts/entrypoint.sh",
    ),
):
    declare(_name, _text, _meaning, "you", read_by=_reader)
for _name, _meaning in (
    ("LORABENCH_UPDATE_GOLDEN", "1: the report tests rewrite their golden files"),
    ("LORABENCH_REHEARSE", "1: the workflow rehearsals run for real (a Docker engine, minutes)"),
):
    declare(_name, _text, _meaning, "tests", read_by="tests")
