"""Network reading: real bytes over a veth pair into a namespace we create, and over loopback."""

from __future__ import annotations

import random

from guardlib import VethPair, start_traffic

from harness.guard import GuardConfig, precheck
from harness.guard.net import read_net_counters


def net_config(*interfaces: str) -> GuardConfig:
    # No loopback limit of its own: every interface named is held to the one limit.
    return GuardConfig(checks=("net",), window_s=1.0, net_interfaces=interfaces, net_ignore_interfaces=(),
                       net_loopback_interfaces=())  # fmt: skip


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


def loopback_verdict(rate: float) -> object:
    port = random.randrange(20000, 60000)
    traffic = start_traffic("127.0.0.1", port, rate=rate, seconds=4, sender_prefix=[])
    try:
        return precheck(GuardConfig(checks=("net",), window_s=1.0, net_interfaces=("lo",)))
    finally:
        traffic.stop()


def test_a_download_over_loopback_is_refused_by_default() -> None:
    # A local mirror or proxy: a download that is traffic on lo only (before: lo was never watched).
    verdict = loopback_verdict(40e6)
    assert not verdict.ok  # type: ignore[attr-defined]
    assert "on lo over 1 s" in verdict.reason and "local mirror or proxy" in verdict.reason  # type: ignore[attr-defined]


def test_small_loopback_traffic_passes_by_default() -> None:
    verdict = loopback_verdict(1e6)
    assert verdict.ok, verdict.reason  # type: ignore[attr-defined]
    assert [r.name for r in verdict.readings] == ["net:lo"]  # type: ignore[attr-defined]


def test_the_distributed_stores_own_chatter_on_loopback_passes() -> None:
    """torch's TCPStore (what torchrun's rendezvous and DDP meet through), busy for the whole window."""
    import threading
    import time

    from torch.distributed import TCPStore

    server = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    client = TCPStore("127.0.0.1", server.port, is_master=False)
    stop = threading.Event()

    def chatter() -> None:
        n = 0
        while not stop.is_set():
            client.set(f"key{n % 64}", f"value {n}" * 8)
            client.get(f"key{n % 64}")
            n += 1
            time.sleep(0.001)

    thread = threading.Thread(target=chatter)
    thread.start()
    try:
        verdict = precheck(GuardConfig(checks=("net",), window_s=1.0, net_interfaces=("lo",)))
    finally:
        stop.set()
        thread.join()
    assert verdict.ok, verdict.reason
    assert next(r for r in verdict.readings if r.name == "net:lo").value > 0  # it did talk
