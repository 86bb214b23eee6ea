"""Network reading: real bytes over a veth pair into a namespace we create, and over loopback."""

from __future__ import annotations

import random

from guardlib import VethPair, start_traffic

from harness.guard import GuardConfig, precheck
from harness.guard.net import read_net_counters


def net_config(*interfaces: str) -> GuardConfig:
    return GuardConfig(checks=("net",), window_s=1.0, net_interfaces=interfaces, net_ignore_interfaces=())


def test_counters_are_read_from_proc_net_dev() -> None:
    counters = read_net_counters()
    assert counters is not None and "lo" in counters


def test_download_over_veth_is_refused(veth: VethPair) -> None:
    port = random.randrange(20000, 60000)
    traffic = start_traffic(
        veth.ns_ip, port, rate=5e6, seconds=4, sender_prefix=["ip", "netns", "exec", veth.netns]
    )
    try:
        verdict = precheck(net_config(veth.host_if))
    finally:
        traffic.stop()
    assert not verdict.ok
    assert verdict.reason is not None
    assert f"received on {veth.host_if} over 1 s" in verdict.reason
    assert "a download?" in verdict.reason and "--allow-noisy" in verdict.reason
    reading = next(r for r in verdict.readings if r.name == f"net:{veth.host_if}")
    assert 3e6 < reading.value < 7e6  # the paced 5 MB/s, measured


def test_quiet_veth_passes(veth: VethPair) -> None:
    verdict = precheck(net_config(veth.host_if))
    assert verdict.ok, verdict.reason
    assert [r.name for r in verdict.readings] == [f"net:{veth.host_if}"]


def test_loopback_traffic_is_refused_when_the_filter_watches_lo() -> None:
    port = random.randrange(20000, 60000)
    traffic = start_traffic("127.0.0.1", port, rate=5e6, seconds=4, sender_prefix=[])
    try:
        verdict = precheck(net_config("lo"))
    finally:
        traffic.stop()
    assert not verdict.ok
    assert "on lo over 1 s" in (verdict.reason or "")


def test_loopback_is_ignored_by_default() -> None:
    port = random.randrange(20000, 60000)
    traffic = start_traffic("127.0.0.1", port, rate=5e6, seconds=4, sender_prefix=[])
    try:
        verdict = precheck(GuardConfig(checks=("net",), window_s=1.0, net_interfaces=("lo",)))
    finally:
        traffic.stop()
    assert verdict.ok and verdict.readings == ()
