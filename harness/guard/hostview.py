"""What the guard can see: the whole host, or only the container it runs in.

A container has its own pid and network namespaces, so the guard there sees neither a job nor a download
on the host. With `pid: host` (compose.yaml's services) it sees every host process, and PID 1's network
namespace is the host's: its counters are read from /proc/1/net/dev. Detected, not configured: a
container has /.dockerenv or /run/.containerenv; host pids are visible when PID 2 is `kthreadd` (parent 0).
Not covered: `network_mode: host` with its own pid namespace, and runtimes that hide /proc/1/net.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from harness.guard.verdict import Reading
from harness.json_types import JsonObject

PROC = Path("/proc")
CONTAINER_MARKERS = (Path("/.dockerenv"), Path("/run/.containerenv"))
HOST_VIEW_FIX = (
    "run the container with the host's pid namespace (compose.yaml's services have `pid: host`; "
    "docker run --pid host), or drop 'view' from guard.checks to time anyway"
)


@dataclass(frozen=True)
class HostView:
    in_container: bool
    host_pids: bool  # the host's processes are in /proc (CPU of other jobs, their GPU use)
    host_net: bool  # the network counters read are the host's (downloads on the host)
    net_dev: str  # the file the network counters come from

    @property
    def sees_host(self) -> bool:
        return self.host_pids and self.host_net

    def describe(self) -> str:
        if not self.in_container:
            return "the host itself (not in a container)"
        if self.sees_host:
            return f"the host from a container (host pid namespace; network counters from {self.net_dev})"
        return "this container only: host processes and host network traffic are invisible"

    def to_dict(self) -> JsonObject:
        return {**asdict(self), "sees_host": self.sees_host}


def is_in_container(markers: tuple[Path, ...] = CONTAINER_MARKERS) -> bool:
    return any(marker.exists() for marker in markers)


def sees_host_pids(proc: Path = PROC) -> bool:
    """PID 2 is kthreadd (parent 0) only in the host's pid namespace: a container's never shows kernel threads."""
    try:
        raw = (proc / "2" / "stat").read_text()
    except OSError:
        return False
    head, _, tail = raw.rpartition(")")
    fields = tail.split()
    return head.partition("(")[2] == "kthreadd" and len(fields) > 1 and fields[1] == "0"


def detect_host_view(proc: Path = PROC, markers: tuple[Path, ...] = CONTAINER_MARKERS) -> HostView:
    in_container = is_in_container(markers)
    host_pids = sees_host_pids(proc)
    if not in_container:
        return HostView(False, host_pids, True, str(proc / "net" / "dev"))
    pid1_net = proc / "1" / "net" / "dev"
    # PID 1 is the host's init only when the host's pids are visible; its counters are then the host's.
    if host_pids and _readable(pid1_net):
        return HostView(True, True, True, str(pid1_net))
    return HostView(True, host_pids, False, str(proc / "net" / "dev"))


def _readable(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError:
        return False
    return True


@cache
def host_view() -> HostView:
    """This process's view, detected once (namespaces do not change under a running process)."""
    return detect_host_view()


def view_reading(view: HostView) -> Reading:
    """Refuses a timing the guard cannot vouch for: in a container that cannot see the host."""
    ok = not view.in_container or view.sees_host
    detail = f"the guard sees {view.describe()}"
    if not ok:
        detail += f" — a host-side download or job would pass unseen; {HOST_VIEW_FIX}."
    return Reading("view", 1.0 if ok else 0.0, "", None, ok, detail)
