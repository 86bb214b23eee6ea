"""What the host's own tools say, gathered once into a frozen `HostFacts` for the doctor's checks.

One small `collect_<source>()` per source, each returning None (or empty) when the host cannot tell; the
parsers (`parse_id`, `parse_stat`, `parse_nvidia_query`, `parse_meminfo`, `rocminfo_pools`) are pure over
the tools' text, so tests feed recorded outputs of the real tools (tests/data/gpu/hosts/). GPU tools
and sysfs readers are harness/gpu's (visibility.parse_rocminfo, arch.read_kfd_gfx); nothing is copied.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness import settings
from harness.autorecipe import cxx_compiler, python_headers
from harness.gpu import mps
from harness.gpu.arch import KFD_NODES, read_kfd_gfx
from harness.gpu.visibility import parse_rocminfo
from harness.json_types import JsonObject

# The variables that change what a GPU run sees; doctor reads only these (and ours, through settings).
ENV_VARS = (
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "HSA_OVERRIDE_GFX_VERSION",
    "USER",
)
SETTINGS = (settings.STACK, settings.REQUIRE_GPU, settings.IMAGE, settings.BASE_IMAGE)
NVIDIA_QUERY = "index,name,driver_version,memory.total,compute_cap"
STAT_FORMAT = "%n|%u|%g|%a|%F"


@dataclass(frozen=True)
class Node:
    """One device node as `stat -c '%n|%u|%g|%a|%F'` prints it (mode in octal)."""

    path: str
    uid: int
    gid: int
    mode: int
    kind: str


@dataclass(frozen=True)
class Identity:
    """The user as `id` prints it: uid, primary gid and every group (GID -> name)."""

    uid: int
    user: str
    gid: int
    groups: Mapping[int, str]

    def can_read_write(self, node: Node) -> bool:
        """What the kernel's permission bits grant (no ACLs: device nodes carry none by default)."""
        if self.uid == 0:
            return True
        if node.uid == self.uid:
            bits = node.mode >> 6
        elif node.gid == self.gid or node.gid in self.groups:
            bits = node.mode >> 3
        else:
            bits = node.mode
        return bits & 0o6 == 0o6


@dataclass(frozen=True)
class TorchFacts:
    version: str
    hip: str | None
    cuda: str | None
    arch_list: tuple[str, ...]
    device_count: int
    device_names: tuple[str, ...] = ()
    error: str | None = None  # torch imported but asking it about GPUs failed


@dataclass(frozen=True)
class NvidiaGpu:
    index: int
    name: str
    driver: str
    memory_mib: int | None
    compute_cap: str | None


@dataclass(frozen=True)
class DockerFacts:
    engine: str | None  # None: a client but no engine answering
    compose: str | None  # None: no compose v2 plugin
    images: Mapping[str, Mapping[str, str]]  # "lorabench:<stack>" -> {"id", "base"} for images present


@dataclass(frozen=True)
class HostFacts:
    """Everything the checks look at. Fields are None where the host could not tell."""

    env: Mapping[str, str]
    in_container: bool = False  # inside a lorabench image
    identity: Identity | None = None
    nodes: tuple[Node, ...] = ()
    rocminfo: str | None = None
    kfd_gfx: tuple[str, ...] = ()
    rocm_version: str | None = None
    nvidia: tuple[NvidiaGpu, ...] | None = None
    torch: TorchFacts | None = None
    torch_missing: str | None = None  # why torch could not be imported
    meminfo: Mapping[str, int] = field(default_factory=dict)  # bytes
    disks: Mapping[str, tuple[str, int]] = field(default_factory=dict)  # label -> (path, free bytes)
    docker: DockerFacts | None = None
    cxx: str | None = None  # the C++ compiler torch.compile's CPU kernels would call (harness.autorecipe)
    python_h: bool = True  # Python.h, which those kernels include (facts recorded before it: assumed there)
    mps_control: str | None = (
        None  # nvidia-cuda-mps-control on PATH (the suite's shared seeds: harness/gpu/mps.py)
    )
    mps_host_pipe: str | None = None  # the pipe folder of a daemon the host runs for every CUDA client

    @property
    def agents(self) -> list[dict[str, str]]:
        return parse_rocminfo(self.rocminfo) if self.rocminfo else []


# --- parsers, pure over the tools' text -------------------------------------------------------------------


def parse_id(text: str) -> Identity:
    """`id`: uid=1000(ana) gid=1000(ana) groups=1000(ana),44(video),109(render)."""
    fields = dict(re.findall(r"(\w+)=(\S+)", text))

    def number_name(value: str) -> tuple[int, str]:
        m = re.fullmatch(r"(\d+)(?:\((.*)\))?", value)
        if not m:
            raise ValueError(f"id: cannot read {value!r}")
        return int(m[1]), m[2] or m[1]

    uid, user = number_name(fields["uid"])
    gid, gname = number_name(fields["gid"])
    groups = dict(number_name(g) for g in fields.get("groups", fields["gid"]).split(","))
    groups.setdefault(gid, gname)
    return Identity(uid, user, gid, groups)


def parse_stat(text: str) -> tuple[Node, ...]:
    """`stat -c '%n|%u|%g|%a|%F' PATHS...`, one node per line."""
    nodes = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 5 and parts[1].isdigit():
            nodes.append(Node(parts[0], int(parts[1]), int(parts[2]), int(parts[3], 8), parts[4]))
    return tuple(nodes)


def parse_nvidia_query(text: str) -> tuple[NvidiaGpu, ...]:
    """`nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap --format=csv,noheader`."""
    gpus = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 5 or not cells[0].isdigit():
            continue
        memory = re.match(r"(\d+)", cells[3])
        gpus.append(
            NvidiaGpu(int(cells[0]), cells[1], cells[2], int(memory[1]) if memory else None, cells[4] or None)
        )
    return tuple(gpus)


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo in bytes (its kB are KiB)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"(\w+):\s+(\d+)\s*kB", line)
        if m:
            out[m[1]] = int(m[2]) * 1024
    return out


def rocminfo_pools(text: str) -> list[int | None]:
    """Per GPU agent, in rocminfo order: the size of its first GLOBAL coarse-grained pool in bytes (the
    memory HIP allocates from: VRAM on a discrete card, the carve-out plus GTT cap on an APU)."""
    sizes: list[int | None] = []
    is_gpu = False
    segment = ""
    for line in text.splitlines():
        if re.match(r"^\s*Agent\s+\d+\s*$", line):
            is_gpu = False
        elif re.match(r"^  Device Type:\s+GPU", line):
            is_gpu = True
            sizes.append(None)
        elif is_gpu and (m := re.match(r"^\s+Segment:\s+(.*)$", line)):
            segment = m[1]
        elif is_gpu and sizes[-1] is None and "GLOBAL" in segment and "COARSE" in segment:
            m = re.match(r"^\s+Size:\s+(\d+)\(0x[0-9a-f]+\)\s*KB", line)
            if m:
                sizes[-1] = int(m[1]) * 1024
    return sizes


# --- collectors: run the real tools, skip quietly what is missing --------------------------------------


def _run(argv: list[str], timeout: float = 30) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def device_paths(dev: Path = Path("/dev")) -> list[str]:
    paths = [
        dev / "kfd",
        *sorted((dev / "dri").glob("renderD*")),
        *sorted(dev.glob("nvidia[0-9]*")),
        dev / "nvidiactl",
    ]
    return [str(p) for p in paths if p.exists()]


def collect_nodes() -> tuple[Node, ...]:
    paths = device_paths()
    return parse_stat(_run(["stat", "-c", STAT_FORMAT, *paths]) or "") if paths else ()


def collect_identity() -> Identity | None:
    text = _run(["id"])
    return parse_id(text) if text else None


def collect_rocm_version() -> str | None:
    for path in (
        Path("/opt/rocm/.info/version"),
        Path(os.environ.get("ROCM_PATH", "/opt/rocm")) / ".info/version",
    ):
        try:
            return path.read_text().strip()
        except OSError:
            continue
    return None


def collect_nvidia() -> tuple[NvidiaGpu, ...] | None:
    text = _run(["nvidia-smi", f"--query-gpu={NVIDIA_QUERY}", "--format=csv,noheader"])
    return None if text is None else parse_nvidia_query(text)


def collect_torch() -> tuple[TorchFacts | None, str | None]:
    try:
        import torch
    except ImportError as exc:
        return None, str(exc)
    hip, cuda = getattr(torch.version, "hip", None), torch.version.cuda
    try:
        archs = tuple(torch.cuda.get_arch_list()) if (hip or cuda) else ()
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        names = tuple(torch.cuda.get_device_name(i) for i in range(count))
    except (RuntimeError, AssertionError, AttributeError) as exc:  # a broken driver answers here
        return TorchFacts(torch.__version__, hip, cuda, (), 0, (), str(exc).splitlines()[0]), None
    return TorchFacts(torch.__version__, hip, cuda, archs, count, names), None


def collect_disks(paths: Mapping[str, Path]) -> dict[str, tuple[str, int]]:
    """Free bytes where each folder is (or would be created: its nearest existing parent)."""
    out = {}
    for label, path in paths.items():
        probe = path.resolve()
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        try:
            out[label] = (str(path), shutil.disk_usage(probe).free)
        except OSError:
            continue
    return out


def collect_docker(stacks: list[str]) -> DockerFacts | None:
    if shutil.which("docker") is None:
        return None
    engine = (_run(["docker", "version", "--format", "{{.Server.Version}}"], 15) or "").strip() or None
    compose = (_run(["docker", "compose", "version", "--short"], 15) or "").strip() or None
    images: dict[str, dict[str, str]] = {}
    if engine:
        for stack in stacks:
            ref = f"lorabench:{stack}"
            fmt = '{{.Id}}|{{index .Config.Labels "org.opencontainers.image.base.name"}}'
            text = _run(["docker", "image", "inspect", "-f", fmt, ref], 15)
            if text:
                image_id, _, base = text.strip().partition("|")
                images[ref] = {"id": image_id, "base": base}
    return DockerFacts(engine, compose, images)


def in_container() -> bool:
    """Inside a lorabench image (it sets LORABENCH_IMAGE): Docker is the host's business there. Any other
    container (a CI job, a dev box) is treated as a host: it may run docker itself."""
    return settings.IMAGE.is_set()


def collect_facts(
    disk_paths: Mapping[str, Path], stacks: list[str], *, kfd_nodes: Path = KFD_NODES
) -> HostFacts:
    """Ask every source once; tools that are absent leave their field empty."""
    torch_facts, torch_missing = collect_torch()
    container = in_container()
    return HostFacts(
        env={**{k: os.environ[k] for k in ENV_VARS if k in os.environ}, **settings.snapshot(SETTINGS)},
        in_container=container,
        identity=collect_identity(),
        nodes=collect_nodes(),
        rocminfo=_run(["rocminfo"]),
        kfd_gfx=tuple(read_kfd_gfx(kfd_nodes)),
        rocm_version=collect_rocm_version(),
        nvidia=collect_nvidia(),
        torch=torch_facts,
        torch_missing=torch_missing,
        meminfo=_meminfo(),
        disks=collect_disks(disk_paths),
        docker=None if container else collect_docker(stacks),
        cxx=cxx_compiler(),
        python_h=python_headers(),
        mps_control=shutil.which(mps.CONTROL),
        mps_host_pipe=str(pipe) if (pipe := mps.host_pipe()) else None,
    )


def _meminfo() -> dict[str, int]:
    try:
        return parse_meminfo(Path("/proc/meminfo").read_text())
    except OSError:
        return {}


def to_dict(facts: HostFacts) -> JsonObject:
    """The facts for --json: what a maintainer attaches to an issue."""
    from dataclasses import asdict

    out = asdict(facts)
    out["rocminfo_gpus"] = [
        {k: a.get(k) for k in ("Name", "Marketing Name", "Uuid")}
        for a in facts.agents
        if a.get("Device Type") == "GPU"
    ]
    out.pop("rocminfo")
    return out
