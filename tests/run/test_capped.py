"""run_capped with real processes: a child allocating past the floor is killed (with its own child),
the parent survives and writes the record; a well-behaved child is left alone; the cap bites."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil

from harness.run.capped import choose_cap_method

ROOT = Path(__file__).resolve().parents[2]
MIB = 2**20

# Grows by 32 MiB every 20 ms up to `limit` MiB, writing each page (b"\1" * n, not calloc'd zeros), after
# starting a grandchild whose pid it records: the watchdog must take the whole group.
HOG = textwrap.dedent("""
    import subprocess, sys, time
    limit_mib, pid_file = int(sys.argv[1]), sys.argv[2]
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    open(pid_file, "w").write(str(grandchild.pid))
    hoard = []
    while len(hoard) * 32 < limit_mib:
        hoard.append(b"\\1" * (32 * 2**20))
        time.sleep(0.02)
    time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 0)
    grandchild.kill()
""")

# The parent is a real process too: it runs the child through run_capped and writes the record.
PARENT = textwrap.dedent("""
    import dataclasses, json, sys
    from pathlib import Path
    from harness.run.capped import run_capped
    record, floor, cap = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    child = [sys.executable, "-c", sys.argv[4], *sys.argv[5:]]
    out = run_capped(child, env=None, cwd=None, cap_bytes=cap or None, floor_bytes=floor or None, poll_s=0.05)
    status = "killed" if out.killed_by_watchdog else ("ok" if out.returncode == 0 else "failed")
    record.write_text(json.dumps({"status": status, **dataclasses.asdict(out)}))
""")


def run_parent(tmp_path: Path, floor: int, cap: int, *child_args: str) -> tuple[int, dict[str, object]]:
    record = tmp_path / "record.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", PARENT, str(record), str(floor), str(cap), HOG, *child_args],
        env=env, timeout=60, check=False,
    )  # fmt: skip
    return proc.returncode, json.loads(record.read_text())


def test_child_past_the_floor_is_killed_and_the_parent_writes_the_record(tmp_path: Path) -> None:
    # Floor 300 MiB under what is free now: safe on any box, reached after ~10 allocations.
    floor = psutil.virtual_memory().available - 300 * MIB
    pid_file = tmp_path / "grandchild.pid"
    rc, record = run_parent(tmp_path, floor, 0, "3000", str(pid_file), "30")
    assert rc == 0, "the parent must survive the kill"
    assert record["status"] == "killed" and record["killed_by_watchdog"] is True
    assert record["returncode"] == -9
    assert str(record["reason"]).startswith("killed by watchdog: available memory")
    reading = record["reading"]
    assert isinstance(reading, dict)
    assert reading["available_bytes"] < reading["floor_bytes"] == floor
    assert reading["child_rss_bytes"] > 100 * MIB
    assert int(record["peak_rss_bytes"]) < 2000 * MIB, "killed long before the 3000 MiB it asked for"
    grandchild = int(pid_file.read_text())
    assert not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE


def test_child_above_the_floor_runs_to_completion(tmp_path: Path) -> None:
    rc, record = run_parent(tmp_path, 64 * MIB, 0, "96", str(tmp_path / "gc.pid"))
    assert rc == 0
    assert record["status"] == "ok" and record["killed_by_watchdog"] is False and record["reason"] is None
    assert int(record["peak_rss_bytes"]) >= 96 * MIB


def test_cap_stops_an_allocation_past_it(tmp_path: Path) -> None:
    rc, record = run_parent(tmp_path, 0, 256 * MIB, "1024", str(tmp_path / "gc.pid"))
    assert rc == 0
    assert record["cap_method"] == choose_cap_method(256 * MIB)
    assert record["status"] == "failed" and record["killed_by_watchdog"] is False
    assert int(record["peak_rss_bytes"]) < 400 * MIB
