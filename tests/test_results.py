import json
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.results import RunRecord, find_records, load_record, write_record


def make_record(**changes: object) -> RunRecord:
    base = {
        "run_id": "r1", "status": "ok", "created": "2026-11-30T00:00:00+00:00", "experiment": "exp-a",
        "setup_name": "smollm2", "seed": 3407, "stack": "cpu", "host": "cpu-test-2c", "fingerprint": "abc",
        "setup": {}, "provenance": {},
    }  # fmt: skip
    return RunRecord(**{**base, **changes})


def test_written_record_reads_back(tmp_path: Path) -> None:
    path = write_record(tmp_path, make_record())
    assert path == tmp_path / "cpu" / "cpu-test-2c" / "exp-a" / "smollm2" / "seed-3407.json"
    assert load_record(path) == make_record()
    assert find_records([tmp_path]) == [path]


def test_a_different_record_is_never_overwritten(tmp_path: Path) -> None:
    first = write_record(tmp_path, make_record())
    write_record(tmp_path, make_record(run_id="r2", created="2026-11-30T01:00:00+00:00"))
    kept = list(first.parent.glob("seed-3407.prev-*.json"))
    assert len(kept) == 1 and load_record(kept[0]).run_id == "r1"
    assert load_record(first).run_id == "r2"
    assert find_records([tmp_path]) == [first]


def test_unknown_format_version_is_refused_with_the_supported_range(tmp_path: Path) -> None:
    path = write_record(tmp_path, make_record())
    data = json.loads(path.read_text())
    data["format_version"] = 9
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match="format version 9 is not supported; this lorabench reads 1"):
        load_record(path)


def test_fingerprint_holds_the_data_by_content_not_by_path(tmp_path: Path) -> None:
    from harness.config import load_setup
    from harness.results import data_identity, run_fingerprint

    rows = '{"question": "q", "context": "CREATE TABLE t (a VARCHAR)", "answer": "SELECT a FROM t"}\n'
    here, there = tmp_path / "a" / "rows.jsonl", tmp_path / "b" / "copy.jsonl"
    for path in (here, there):
        path.parent.mkdir()
        path.write_text(rows)

    def fp(source: Path | str, kind: str = "cpu-x86-64-2c-amx") -> str:
        return run_fingerprint(load_setup(None, [("data.source", str(source))]), "cpu", kind)

    assert fp(here) == fp(there)  # same bytes in two folders: one question
    assert data_identity(str(here)).startswith("sha256:")
    there.write_text(rows + rows)
    assert fp(here) != fp(there)  # changed bytes: another question, although the path is the same as before
    assert fp(here) != fp(here, kind="cpu-x86-64-2c-avx2")  # another kind of host
    # A hub id (no such file) stays itself.
    assert data_identity("b-mc2/sql-create-context") == "b-mc2/sql-create-context"
    assert fp("b-mc2/sql-create-context") != fp(here)
