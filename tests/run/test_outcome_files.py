"""The outcome files of a work folder (harness.run.outcome): what the parent and a later sweep read
after a stop, a kill or a full disk; and the modes records are written with."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from harness import atomic, settings
from harness.errors import UserError
from harness.results import DataInfo, Metrics
from harness.run.memory_env import check_memory_settings
from harness.run.outcome import (
    RESERVE_FILE,
    Outcome,
    mark_unwritten,
    read_partial,
    read_unwritten_mark,
    reserve_space,
    unwritten_error,
    unwritten_exit,
    write_durable,
    write_outcome,
)
from harness.run.parent import stopped_outcome

DATA = DataInfo(source="rows.jsonl", split_hash="abc", n_rows=60, n_train=54, n_test=6)
BASELINE = Metrics(exact_match=10.0, well_formed=50.0, semantic=20.0, n=6, eval_s=1.0)


def test_a_stop_after_the_trainer_finished_keeps_its_status(tmp_path: Path) -> None:
    write_outcome(Outcome(status="ok", data=DATA, baseline=BASELINE, trained=BASELINE), tmp_path)
    outcome = stopped_outcome(tmp_path, "SIGTERM")
    assert outcome.status == "ok" and outcome.trained is not None


def test_a_stop_mid_run_keeps_what_the_trainer_had_computed_and_names_ctrl_c(tmp_path: Path) -> None:
    partial = Outcome().keep_in(tmp_path)
    partial.data = DATA
    partial.baseline = BASELINE
    partial.add_timings(load_s=1.5)
    outcome = stopped_outcome(tmp_path, "SIGINT")
    assert outcome.status == "killed" and "SIGINT (Ctrl-C)" in (outcome.reason or "")
    assert (
        outcome.data == DATA and outcome.baseline == BASELINE and outcome.timings.load_s == pytest.approx(1.5)
    )


def test_partial_is_rewritten_as_each_field_is_set(tmp_path: Path) -> None:
    outcome = Outcome().keep_in(tmp_path)
    assert read_partial(tmp_path) == Outcome()
    outcome.data = DATA
    assert read_partial(tmp_path).data == DATA  # type: ignore[union-attr]


def test_a_full_disk_write_uses_the_reserve_once(tmp_path: Path) -> None:
    reserve_space(tmp_path)
    assert (tmp_path / RESERVE_FILE).stat().st_size > 0
    write_durable(tmp_path / "x.json", "{}")  # plain case: the reserve stays
    assert (tmp_path / RESERVE_FILE).exists()


def test_the_trainers_exit_status_names_the_errno(tmp_path: Path) -> None:
    code = unwritten_exit(OSError(errno.ENOSPC, "No space left on device"))
    error = unwritten_error(code, tmp_path)
    assert error is not None and error.errno == errno.ENOSPC
    assert unwritten_error(1, tmp_path) is None and unwritten_error(-9, tmp_path) is None


def test_an_empty_files_name_keeps_status_and_errno(tmp_path: Path) -> None:
    mark_unwritten(tmp_path, "failed", OSError(errno.ENOSPC, "No space left on device"))
    status, error = read_unwritten_mark(tmp_path)  # type: ignore[misc]
    assert status == "failed" and error.errno == errno.ENOSPC


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_files_and_folders_get_the_users_umask_not_0600(tmp_path: Path, mask: int, mode: int) -> None:
    old = os.umask(mask)
    try:
        atomic.write_text(tmp_path / "record.json", "{}")
        with atomic.building_dir(tmp_path / "adapter"):
            pass
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "record.json").stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "adapter").stat().st_mode) == mode | 0o111 & ~mask


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("LORABENCH_MEM_CAP", "-5", "above zero"),
        ("LORABENCH_MEM_CAP", "0", "above zero"),
        ("LORABENCH_MEMORY_FLOOR", "1e999t", "not a size"),
        ("LORABENCH_MIN_FREE", "lots", "not a size"),
    ],
)
def test_sizes_that_mean_nothing_are_refused(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, words: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(UserError, match=rf"\${name}: .*{words}"):
        settings.lookup(name).get()


def test_a_cap_too_small_or_a_floor_above_the_hosts_memory_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(UserError, match=r"\$LORABENCH_MEM_CAP: 1 MiB is too small"):
        check_memory_settings(1 << 20, None)
    with pytest.raises(UserError, match=r"\$LORABENCH_MEMORY_FLOOR: 100 TiB is not below this host's"):
        check_memory_settings(None, 100 << 40)
    check_memory_settings(4 << 30, 512 << 20)
