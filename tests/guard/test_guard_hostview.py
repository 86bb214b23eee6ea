"""What the guard can see: the host's pid namespace (kthreadd), the counters it reads, and the 'view' reading.
Containers themselves are in tests/containers (a real engine); here real namespaces made with unshare."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from guardlib import PYTHON, child_env

from harness.guard import GuardConfig, precheck
from harness.guard.hostview import detect_host_view, sees_host_pids, view_reading

VIEW = "import json; from harness.guard.hostview import detect_host_view; print(json.dumps(detect_host_view().to_dict()))"


def test_host_sees_itself() -> None:
    # Not asserting in_container: a VM built from a container image keeps /.dockerenv (this CI's does).
    view = detect_host_view()
    assert sees_host_pids() and view.sees_host
    assert view_reading(view).ok


def test_own_pid_namespace_hides_the_host(hermetic: list[str]) -> None:
    out = subprocess.run(
        [*hermetic, PYTHON, "-c", VIEW], env=child_env(), capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout)["host_pids"] is False


def test_in_a_container_with_host_pids_the_counters_are_pid_1s(tmp_path: Path) -> None:
    marker = tmp_path / ".dockerenv"
    marker.touch()
    view = detect_host_view(markers=(marker,))
    assert view.in_container and view.sees_host and view.net_dev == "/proc/1/net/dev"


def test_container_without_host_pids_is_refused_with_the_fix(tmp_path: Path) -> None:
    marker = tmp_path / ".dockerenv"
    marker.touch()
    blind = detect_host_view(proc=tmp_path / "noproc", markers=(marker,))
    assert not blind.sees_host and blind.net_dev.endswith("net/dev")
    reading = view_reading(blind)
    assert not reading.ok and "this container only" in reading.detail and "pid: host" in reading.detail


def test_verdict_records_the_view() -> None:
    verdict = precheck(GuardConfig(checks=("view",), window_s=0.1))
    assert verdict.ok and [r.name for r in verdict.readings] == ["view"]
    assert verdict.to_dict()["host_view"]["sees_host"] is True
