"""Network bytes/s per interface from /proc/net/dev: a background download shows up here first.
In a container with the host's pid namespace the host's counters are read instead (guard/hostview.py).

Loopback is watched too, with a higher limit of its own: a download from a local mirror or proxy is
traffic on `lo` only, while lorabench's own loopback chatter (torch's distributed store) is small.
Not covered: traffic between two containers on one bridge that this network namespace cannot see.

Parsed by hand, not with psutil.net_io_counters(pernic=True): psutil reads only this process's own
/proc/net/dev, and in a container the host's counters are /proc/1/net/dev."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from harness.guard.config import GuardConfig
from harness.guard.hostview import host_view
from harness.guard.verdict import Reading, format_bytes, format_seconds


@dataclass(frozen=True)
class NetCounters:
    rx_bytes: int
    tx_bytes: int


def read_net_counters(path: Path | None = None) -> dict[str, NetCounters] | None:
    """Byte counters per interface (default: the host's, as far as this process can see them); None where
    the host has no /proc (macOS, Windows)."""
    path = path or Path(host_view().net_dev)
    try:
        lines = path.read_text().splitlines()[2:]  # two header lines
    except OSError:
        return None
    counters: dict[str, NetCounters] = {}
    for line in lines:
        name, _, rest = line.partition(":")
        fields = rest.split()
        if len(fields) >= 9:
            counters[name.strip()] = NetCounters(rx_bytes=int(fields[0]), tx_bytes=int(fields[8]))
    return counters


def is_watched(interface: str, config: GuardConfig) -> bool:
    if any(fnmatch(interface, pattern) for pattern in config.net_ignore_interfaces):
        return False
    return config.net_interfaces is None or any(fnmatch(interface, p) for p in config.net_interfaces)


def is_loopback(interface: str, config: GuardConfig) -> bool:
    return any(fnmatch(interface, pattern) for pattern in config.net_loopback_interfaces)


def net_readings(
    before: dict[str, NetCounters], after: dict[str, NetCounters], seconds: float, config: GuardConfig
) -> list[Reading]:
    """One reading per watched interface: the busier direction's bytes/s over the window."""
    readings: list[Reading] = []
    for name in sorted(set(before) & set(after)):
        if not is_watched(name, config):
            continue
        # Counters can reset when an interface is recreated: a negative delta means "no data".
        rx = max(0, after[name].rx_bytes - before[name].rx_bytes) / seconds
        tx = max(0, after[name].tx_bytes - before[name].tx_bytes) / seconds
        rate, direction = (rx, "received") if rx >= tx else (tx, "sent")
        loopback = is_loopback(name, config)
        limit = config.net_loopback_bytes_per_s_limit if loopback else config.net_bytes_per_s_limit
        ok = rate <= limit
        detail = f"{format_bytes(rate)}/s {direction} on {name} over {format_seconds(seconds)}"
        if not ok:
            what = "a download from a local mirror or proxy?" if loopback else "a download?"
            detail += f" (limit {format_bytes(limit)}/s) — {what}"
        readings.append(Reading(f"net:{name}", rate, "B/s", limit, ok, detail))
    return readings
