"""The shipped record schemas (harness/record_schema.py): the models' own, one per format version, and
every record published under reports/results/ (kept previous ones too) valid against its format's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from schema_check import errors

from harness.errors import UserError
from harness.record_schema import record_schema, schema_path, schema_text
from harness.results import FORMAT_VERSION, SUPPORTED_VERSIONS, load_record

REPORTS = Path(__file__).resolve().parents[2] / "reports"
# The published records and the untimed ones kept aside (format 1 among them): both ship in the repository.
RECORDS = sorted([*(REPORTS / "results").rglob("seed-*.json"), *(REPORTS / "untimed").rglob("seed-*.json")])


def shipped(version: int) -> dict:  # type: ignore[type-arg]
    return json.loads(schema_path(version).read_text(encoding="utf-8"))


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_the_shipped_schemas_are_the_models_own(version: int) -> None:
    assert schema_path(version).read_text(encoding="utf-8") == schema_text(version)


def test_there_are_published_records_of_both_formats() -> None:
    versions = {json.loads(p.read_text(encoding="utf-8"))["format_version"] for p in RECORDS}
    assert versions == set(SUPPORTED_VERSIONS), versions


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: str(p.relative_to(REPORTS)))
def test_every_published_record_validates_against_its_formats_schema(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert errors(data, shipped(data["format_version"])) == []


def test_a_record_is_not_valid_against_the_other_formats_schema() -> None:
    by_version = {json.loads(p.read_text(encoding="utf-8"))["format_version"]: p for p in RECORDS}
    for version, path in by_version.items():
        other = 3 - version
        found = errors(json.loads(path.read_text(encoding="utf-8")), shipped(other))
        assert any("format_version" in e for e in found), found


def test_a_broken_record_is_caught_by_the_schema() -> None:
    data = json.loads(RECORDS[0].read_text(encoding="utf-8"))
    data["status"] = "fine"
    data["train"]["loss"] = "low"
    data["setup"]["recipe"]["steps"] = "many"
    del data["run_id"]
    found = errors(data, shipped(data["format_version"]))
    assert any("status" in e for e in found)
    assert any("loss" in e for e in found)
    assert any("setup.recipe.steps" in e for e in found)
    assert any("missing 'run_id'" in e for e in found)


def test_format_1_names_the_metric_executes() -> None:
    old, new = record_schema(1)["$defs"]["SqlMetrics"], record_schema(FORMAT_VERSION)["$defs"]["SqlMetrics"]
    assert "executes" in old["required"] and "well_formed" not in old["properties"]
    assert "well_formed" in new["required"] and "executes" not in new["properties"]


def test_a_newer_format_is_refused_in_one_line(tmp_path: Path) -> None:
    data = json.loads(RECORDS[0].read_text(encoding="utf-8"))
    path = tmp_path / "seed-1.json"
    path.write_text(json.dumps({**data, "format_version": FORMAT_VERSION + 1}), encoding="utf-8")
    with pytest.raises(UserError) as refused:
        load_record(path)
    message = str(refused.value)
    assert f"record format version {FORMAT_VERSION + 1} not supported; this lorabench reads 1-2" in message
    assert "\n" not in message


def test_a_setting_a_later_lorabench_removed_is_left_out_on_read(tmp_path: Path) -> None:
    data = json.loads(RECORDS[0].read_text(encoding="utf-8"))
    data["setup"]["recipe"]["a_removed_switch"] = "on"
    data["setup"]["no_longer_a_section"] = {"x": 1}
    path = tmp_path / "seed-1.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    record = load_record(path)
    assert record.setup.recipe.steps == data["setup"]["recipe"]["steps"]
    assert "a_removed_switch" not in record.setup.recipe.model_dump()
