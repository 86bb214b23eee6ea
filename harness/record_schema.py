"""The run record's JSON Schemas, one per format version, generated from the record's models and shipped in
the package (`harness/report/schemas/record.schema.json`, `record-<N>.schema.json` for older formats), so a
stranger's tool can check a record without lorabench. Format 1 is format 2 with `well_formed` called
`executes`. Regenerate with `python -m harness.record_schema` (tests/report/test_record_schema.py checks).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from harness import catalog
from harness.config import SetupConfig
from harness.json_types import JsonObject
from harness.results import FORMAT_VERSION, SUPPORTED_VERSIONS, RunRecord

SCHEMAS = Path(__file__).resolve().parent / "report" / "schemas"
# What format 1 called each field format 2 renamed, per metrics model.
RENAMED_IN_2 = {"well_formed": "executes"}


def schema_path(version: int, folder: Path = SCHEMAS) -> Path:
    return folder / ("record.schema.json" if version == FORMAT_VERSION else f"record-{version}.schema.json")


def _with_task_metrics(schema: JsonObject) -> JsonObject:
    """The record's scores as one of the tasks' metrics models: the record validates them with the model
    of its setup's task (harness/tasks/<name>/metrics.py), which a schema cannot look up."""
    models = [catalog.metrics_model(name) for name in catalog.task_names()]
    defs = {**schema["$defs"], **{m.__name__: m.model_json_schema(mode="serialization") for m in models}}
    defs["Metrics"] = {
        "description": "Scores on the test split: the metrics model of the record's task (setup.task).",
        "anyOf": [{"$ref": f"#/$defs/{m.__name__}"} for m in models],
    }
    return {**schema, "$defs": defs}


def _with_setup(schema: JsonObject) -> JsonObject:
    """The record's setup as the setup model's schema: the record writes the fields it was given (a field
    it predates stays out, see `harness.results.as_written`), which its serializer cannot tell a schema."""
    setup = SetupConfig.model_json_schema(mode="serialization")
    sections = {**setup.pop("$defs", {}), "SetupConfig": setup}
    # A setting a later lorabench removed (its switch deleted with its code) stays in the records made
    # before, and the reader leaves it out (`harness.results.known_fields`): the schema lets it stand.
    sections = {
        name: {k: v for k, v in section.items() if k != "additionalProperties"}
        for name, section in sections.items()
    }
    defs = {**schema["$defs"], **sections}
    properties = {**schema["properties"], "setup": {"$ref": "#/$defs/SetupConfig"}}
    return {**schema, "$defs": defs, "properties": properties}


def _as_format_1(schema: JsonObject) -> JsonObject:
    older = copy.deepcopy(schema)
    for name, definition in older["$defs"].items():
        properties = definition.get("properties", {})
        if not name.endswith("Metrics") or not set(RENAMED_IN_2) & set(properties):
            continue
        for new, old in RENAMED_IN_2.items():
            properties[old] = properties.pop(new)
            definition["required"] = [old if key == new else key for key in definition.get("required", [])]
    return older


def record_schema(version: int = FORMAT_VERSION) -> JsonObject:
    """The JSON Schema of a record of format `version` (one of SUPPORTED_VERSIONS)."""
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(f"record format version {version} has no schema; known: {SUPPORTED_VERSIONS}")
    schema = _with_setup(_with_task_metrics(RunRecord.model_json_schema(mode="serialization")))
    if version == 1:
        schema = _as_format_1(schema)
    title = f"lorabench run record, format {version}"
    properties = {**schema["properties"], "format_version": {"const": version, "title": "Format Version"}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
        "title": title,
        "properties": properties,
        "required": sorted(schema["required"]),
    }


def schema_text(version: int = FORMAT_VERSION) -> str:
    return json.dumps(record_schema(version), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def write_schemas(folder: Path = SCHEMAS) -> list[Path]:
    written = []
    for version in SUPPORTED_VERSIONS:
        path = schema_path(version, folder)
        path.write_text(schema_text(version), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_schemas():
        print(path)
