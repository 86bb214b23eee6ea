"""The quiet-machine guard inside the cpu image, against real load on the host (outside the container):
a CPU hog and a download over a veth pair into a network namespace this test makes. With compose's
`pid: host` the guard sees both and refuses; without it the hog is invisible and the 'view' reading
refuses instead. A quiet host passes."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from containerlib import GID, IMAGE, UID, HostDirs, compose_run, host_env

# Busy for at most `seconds`, so a failed test never leaves it burning.
HOG = "import sys, time\nt = time.time()\nwhile time.time() - t < float(sys.argv[1]): pass\n"
SENDER = """
import socket, sys, time
srv = socket.create_server((sys.argv[1], int(sys.argv[2])))
print("listening", flush=True)
conn, _ = srv.accept()
chunk, start, sent = b"x" * 65536, time.time(), 0
while time.time() - start < float(sys.argv[4]):
    conn.sendall(chunk)
    sent += len(chunk)
    ahead = sent / float(sys.argv[3]) - (time.time() - start)
    if ahead > 0:
        time.sleep(ahead)
conn.close()
"""
# A download as huggingface_hub does one: bytes from the network into a growing *.incomplete blob.
DOWNLOADER = """
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
with open(sys.argv[3], "wb") as out:
    while chunk := s.recv(1 << 16):
        out.write(chunk)
        out.flush()
"""


def write_guard_config(dirs: HostDirs, **fields: object) -> str:
    """A [guard] file in the mounted data folder; returns its path inside the container."""
    lines = ["[guard]", *(f"{k} = {json.dumps(v)}" for k, v in fields.items())]
    (dirs.data.parent / "guard.toml").write_text("\n".join(lines) + "\n")
    return "/data/guard.toml"


def guard_json(done: subprocess.CompletedProcess[str]) -> dict:
    start = done.stdout.find("{")
    assert start >= 0, done.stdout + done.stderr
    return json.loads(done.stdout[start:])


@pytest.fixture
def host_hog() -> Iterator[subprocess.Popen[bytes]]:
    """A real CPU burner on the host, outside any container; niced up so a loaded machine still runs it."""
    argv = [sys.executable, "-c", HOG, "90"]
    if os.geteuid() == 0:
        argv = ["nice", "-n", "-10", *argv]
    hog = subprocess.Popen(argv)
    time.sleep(0.5)
    yield hog
    hog.kill()
    hog.wait()


def test_host_cpu_hog_refuses_a_timed_run_in_the_container(
    cpu_image: dict[str, str], host_dirs: HostDirs, host_hog: subprocess.Popen[bytes]
) -> None:
    env = host_env(host_dirs, image_digest=cpu_image["id"])
    config = write_guard_config(host_dirs, checks=["cpu", "view"], window_s=2.0)
    done = compose_run(
        env, "smoke-cpu", "lorabench", "run", "--timed", "--guard-config", config, "--results", "results",
        "--model", "smollm2-135m", "--data", "/data/rows.jsonl", "--set", "data.test_size=8", "--seed", "3407", "--quiet",
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    [path] = list(host_dirs.results.rglob("seed-3407.json"))
    record = json.loads(path.read_text())
    assert record["status"] == "refused"
    assert f"pid {host_hog.pid} " in record["reason"], "the hog's host pid is named"
    precheck = record["guard"]["precheck"]
    assert (
        precheck["host_view"]["sees_host"] is True and precheck["host_view"]["net_dev"] == "/proc/1/net/dev"
    )
    # The record names the image it was made in, its id, its base and the commit it was built from.
    image = record["provenance"]["image"]
    assert image["name"] == IMAGE and image["digest"] == cpu_image["id"] and image["guard_sees_host"] is True
    assert image["base"] == cpu_image["org.opencontainers.image.base.name"]
    assert record["provenance"]["git"]["sha"] == cpu_image["io.lorabench.git-sha"]
    assert record["provenance"]["stack"]["lockfile"] == "/opt/lorabench/lockfiles/cpu.txt"
    assert (path.stat().st_uid, path.stat().st_gid) == (UID, GID)


def test_without_host_pids_the_hog_is_invisible_and_the_view_refuses(
    cpu_image: dict[str, str], host_dirs: HostDirs, host_hog: subprocess.Popen[bytes]
) -> None:
    config = write_guard_config(host_dirs, checks=["cpu", "view"], window_s=2.0)
    # A plain `docker run`: the container's own pid namespace, as the old compose file had it.
    done = subprocess.run(
        ["docker", "run", "--rm", "--user", f"{UID}:{GID}", "-v", f"{host_dirs.data.parent}:/data:ro", IMAGE,
         "lorabench", "guard", "--json", "--config", config],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    readings = {r["name"]: r for r in guard_json(done)["readings"]}
    assert readings["cpu_other"]["ok"], "only the container's own processes were visible"
    assert not readings["view"]["ok"] and "pid: host" in readings["view"]["detail"]


@dataclass(frozen=True)
class Veth:
    host_if: str
    netns: str
    ns_ip: str


@pytest.fixture
def veth() -> Iterator[Veth]:
    """A veth pair whose far end lives in a network namespace this test makes (the project's own test host)."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and ip(8) to create a network namespace")
    tag = f"{os.getpid() % 10000}{random.randrange(100)}"
    netns, host_if, ns_if = f"lbctr{tag}", f"lbch{tag}", f"lbcn{tag}"
    subnet = random.randrange(0, 250)
    host_ip, ns_ip = f"10.232.{subnet}.1", f"10.232.{subnet}.2"
    steps = [
        ["ip", "netns", "add", netns],
        ["ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if],
        ["ip", "link", "set", ns_if, "netns", netns],
        ["ip", "addr", "add", f"{host_ip}/30", "dev", host_if],
        ["ip", "link", "set", host_if, "up"],
        ["ip", "netns", "exec", netns, "ip", "addr", "add", f"{ns_ip}/30", "dev", ns_if],
        ["ip", "netns", "exec", netns, "ip", "link", "set", ns_if, "up"],
    ]
    try:
        for step in steps:
            made = subprocess.run(step, capture_output=True)
            if made.returncode != 0:
                pytest.skip(
                    f"cannot build the test network ({' '.join(step)}): {made.stderr.decode().strip()}"
                )
        yield Veth(host_if, netns, ns_ip)
    finally:
        subprocess.run(["ip", "link", "del", host_if], capture_output=True)
        subprocess.run(["ip", "netns", "del", netns], capture_output=True)


@pytest.fixture
def host_download(veth: Veth, host_dirs: HostDirs) -> Iterator[Path]:
    """A host process downloading at 5 MB/s over the veth into the (mounted) HF cache as a *.incomplete blob."""
    blob = host_dirs.hf / "hub" / "models--test--model" / "blobs" / "0123abcd.incomplete"
    blob.parent.mkdir(parents=True)
    for folder in (host_dirs.hf, *blob.relative_to(host_dirs.hf).parents):  # the cache is the user's
        os.chown(host_dirs.hf / folder, UID, GID)
    port = random.randrange(20000, 60000)
    sender = subprocess.Popen(
        ["ip", "netns", "exec", veth.netns, sys.executable, "-c", SENDER, veth.ns_ip, str(port), "5e6", "60"],
        stdout=subprocess.PIPE,
    )
    assert sender.stdout is not None and sender.stdout.readline().strip() == b"listening"
    receiver = subprocess.Popen([sys.executable, "-c", DOWNLOADER, veth.ns_ip, str(port), str(blob)])
    time.sleep(0.5)
    yield blob
    for proc in (receiver, sender):
        proc.kill()
        proc.wait()


def test_host_download_is_seen_on_the_host_interface_and_in_the_mounted_cache(
    cpu_image: dict[str, str], host_dirs: HostDirs, veth: Veth, host_download: Path
) -> None:
    env = host_env(host_dirs)
    config = write_guard_config(host_dirs, checks=["net", "downloads", "view"], window_s=2.0,
                                net_interfaces=[veth.host_if], net_ignore_interfaces=[])  # fmt: skip
    done = compose_run(env, "smoke-cpu", "lorabench", "guard", "--json", "--config", config)
    assert done.returncode == 3, done.stdout + done.stderr
    readings = {r["name"]: r for r in guard_json(done)["readings"]}
    net = readings[f"net:{veth.host_if}"]
    assert not net["ok"] and 2e6 < net["value"] < 8e6, net  # the paced 5 MB/s, seen from inside
    assert not readings["downloads"]["ok"]
    assert (
        "/cache/huggingface/hub/models--test--model/blobs/0123abcd.incomplete"
        in readings["downloads"]["detail"]
    )
    assert host_download.stat().st_size > 0


def test_quiet_host_passes_in_the_container(
    cpu_image: dict[str, str], host_dirs: HostDirs, veth: Veth
) -> None:
    env = host_env(host_dirs)
    config = write_guard_config(host_dirs, checks=["net", "downloads", "view"], window_s=2.0,
                                net_interfaces=[veth.host_if], net_ignore_interfaces=[])  # fmt: skip
    done = compose_run(env, "smoke-cpu", "lorabench", "guard", "--json", "--config", config)
    assert done.returncode == 0, done.stdout + done.stderr
    verdict = guard_json(done)
    assert [r["name"] for r in verdict["readings"]] == [f"net:{veth.host_if}", "downloads", "view"]
    assert verdict["host_view"]["sees_host"] is True
