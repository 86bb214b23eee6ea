"""Issue 39, "say what happens": a wait for a lock names its holder on stderr (it was logged at INFO with no
handler: a finished run waiting for its record's lock printed nothing), and the report skips a record it
cannot read, with a warning, instead of refusing the whole folder."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.locks import LockBusy, exclusive_lock
from harness.report.groups import load_records
from harness.results import write_record
from tests.test_results import make_record


def test_a_lock_wait_names_the_holder_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lock, refused = tmp_path / "record.lock", []

    def wait_from_another_thread() -> None:
        try:
            with exclusive_lock(lock, timeout_s=0.2, what="record lock"):
                pass
        except LockBusy as exc:
            refused.append(exc)

    with exclusive_lock(lock, what="record lock"):
        thread = threading.Thread(target=wait_from_another_thread)
        thread.start()
        thread.join()
    assert refused
    said = capsys.readouterr().err
    assert f"lorabench: waiting for the record lock {lock}, held by pid " in said


def test_a_free_lock_says_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with exclusive_lock(tmp_path / "free.lock", what="record lock"):
        pass
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("bad", ['{"format_version": 2, "run_', "[1, 2]", '{"format_version": 99}'])
def test_the_report_skips_an_unreadable_sibling_and_reads_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    good = write_record(tmp_path, make_record())
    broken = good.with_name("seed-42.json")
    broken.write_text(bad)
    (loaded,) = load_records([tmp_path])  # before issue 39: UserError, no report at all
    assert loaded.path == good
    warning = capsys.readouterr().err
    assert "warning: skipped a record that cannot be read" in warning and str(broken) in warning


def test_a_record_named_itself_must_read(tmp_path: Path) -> None:
    broken = tmp_path / "seed-1.json"
    broken.write_text("[1, 2]")
    with pytest.raises(UserError, match="not a run record"):
        load_records([broken])
