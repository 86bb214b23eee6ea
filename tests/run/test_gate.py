"""The guard's gate: a timed run's trainer waits after its imports for the parent's verdict."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from harness.errors import RunStopped
from harness.guard import GuardConfig, Precheck
from harness.run.gate import GATE_FILE, await_gate, open_gate
from harness.run.parent import GatedVerdict


def test_the_trainer_goes_on_when_the_parent_says_go(tmp_path: Path) -> None:
    passed = threading.Event()

    def trainer() -> None:
        await_gate(tmp_path, limit_s=30)
        passed.set()

    waiting = threading.Thread(target=trainer)
    waiting.start()
    assert not passed.wait(0.5)  # no verdict file yet: the trainer has not gone on
    open_gate(tmp_path, go=True)
    waiting.join(timeout=30)
    assert passed.is_set()


def test_a_refused_run_stops_the_trainer_at_the_gate(tmp_path: Path) -> None:
    open_gate(tmp_path, go=False)
    with pytest.raises(RunStopped) as stopped:
        await_gate(tmp_path, limit_s=10)
    assert stopped.value.status == "refused"


def test_a_verdict_that_never_comes_ends_the_wait(tmp_path: Path) -> None:
    with pytest.raises(RunStopped, match="no verdict"):
        await_gate(tmp_path, limit_s=0.1)


def test_a_gone_work_folder_takes_no_verdict(tmp_path: Path) -> None:
    open_gate(tmp_path / "removed", go=True)
    assert not (tmp_path / "removed").exists()


def test_the_verdict_opens_the_gate_after_the_window(tmp_path: Path) -> None:
    config = GuardConfig(checks=("downloads",), window_s=0.5, download_dirs=(str(tmp_path / "hub"),))
    verdict = GatedVerdict(Precheck(config), tmp_path, allow_noisy=False)
    assert verdict.result().ok
    assert (tmp_path / GATE_FILE).read_text() == "go"


def test_a_guard_that_fails_closes_the_gate_and_raises_in_the_parent(tmp_path: Path) -> None:
    class Broken(Precheck):
        def verdict(self):
            raise OSError("no /proc")

    verdict = GatedVerdict(
        Broken(GuardConfig(checks=("downloads",), window_s=0.1)), tmp_path, allow_noisy=True
    )
    with pytest.raises(OSError, match="no /proc"):
        verdict.result()
    with pytest.raises(RunStopped):
        await_gate(tmp_path, limit_s=1)
