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


def test_a_version_1_record_is_lifted_to_well_formed(tmp_path: Path) -> None:
    committed = sorted((Path(__file__).resolve().parents[1] / "reports" / "results" / "cpu").rglob("seed-*.json"))
    committed = [p for p in committed if ".prev-" not in p.name]
    assert committed, "the committed CPU records are the version-1 sample"
    raw = json.loads(committed[0].read_text())
    assert raw["format_version"] == 1 and "executes" in raw["trained"]
    record = load_record(committed[0])
    assert record.format_version == 2
    assert record.trained is not None and record.trained.well_formed == raw["trained"]["executes"]
    assert record.baseline is not None and record.baseline.well_formed == raw["baseline"]["executes"]


def test_n_clock_stopped_is_written_only_when_the_sql_safety_net_fired(tmp_path: Path) -> None:
    # Records whose every score is deterministic keep their JSON as before issue #18b.
    from harness.results import Metrics

    quiet = Metrics(exact_match=50.0, well_formed=100.0, semantic=50.0, n=2, n_clock_stopped=0)
    assert "n_clock_stopped" not in quiet.model_dump(mode="json")
    touched = Metrics(exact_match=50.0, well_formed=100.0, semantic=50.0, n=2, n_clock_stopped=1)
    path = write_record(tmp_path, make_record(trained=touched))
    assert json.loads(path.read_text())["trained"]["n_clock_stopped"] == 1
    assert load_record(path).trained == touched
