"""`report --json` and `compare --json`: JSON on stdout that validates against the published schemas
(harness/report/schemas/), every claim with its status, numbers, n and conditions; the schemas are the
models' own (regenerate with `python -m harness.report.outputs`)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from builders import write_story_results
from schema_check import errors

from harness.cli import main
from harness.report.outputs import PUBLISHED, SCHEMAS, CompareOut, ReportOut, schema_text

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"


def schema(name: str) -> dict:  # type: ignore[type-arg]
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_schemas_are_the_models_own(name: str) -> None:
    assert (SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8") == schema_text(PUBLISHED[name])


@pytest.fixture(scope="module")
def report_json(tmp_path_factory: pytest.TempPathFactory) -> dict:  # type: ignore[type-arg]
    root = tmp_path_factory.mktemp("json")
    write_story_results(root / "results")
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert main(["report", str(root / "results"), "-o", str(root / "reports"), "--benchmarks", str(BENCHMARKS), "--json"]) == 0
    return json.loads(stdout.getvalue())  # stdout holds the JSON and nothing else


def test_report_json_validates_and_carries_every_claim(report_json: dict) -> None:  # type: ignore[type-arg]
    assert errors(report_json, schema("report")) == []
    ReportOut.model_validate(report_json)
    (amd,) = [s for s in report_json["scorecards"] if s["platform"].startswith("ROCm")]
    assert amd["verdict"].startswith("FAIL") and amd["claims_total"] > 0
    for claim in amd["claims"]:
        assert claim["status"] in ("pass", "fail", "not evaluable") and claim["measured"]
        assert set(claim["n"]) == set(claim["conditions"]) or claim["status"] == "not evaluable"
    gain = next(c for c in amd["claims"] if c["name"] == "gain on every seed")
    assert gain["n"] == {"lora": 3} and gain["conditions"]["lora"]["timing"] == "timed (guard)"
    assert set(gain["value"]) == {"42", "1234", "3407"}
    setup = next(s for s in amd["setups"] if s["setup"] == "smollm2-135m-lora")
    assert setup["figures"]["train time (s)"]["n"] == 3
    assert report_json["missing_platforms"] == ["No NVIDIA GPU record yet (CUDA): no claim of the suite has been judged on one."]


def test_the_validator_catches_a_broken_output(report_json: dict) -> None:  # type: ignore[type-arg]
    broken = json.loads(json.dumps(report_json))
    del broken["scorecards"][0]["claims"][0]["status"]
    broken["scorecards"][0]["setups"][0]["runs"] = "three"
    broken["format"] = "lorabench-report/2"
    found = errors(broken, schema("report"))
    assert any("missing 'status'" in e for e in found)
    assert any("runs: str is not integer" in e for e in found)
    assert any("format" in e for e in found)


def test_a_committed_record_validates_against_the_record_schema() -> None:
    path = REPO / "reports/results/h200-image/nvidia-h200/exp_a/smollm2-135m-lora/seed-42.json"
    assert errors(json.loads(path.read_text(encoding="utf-8")), schema("record")) == []


def test_compare_json_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from test_compare import write_side

    old = write_side(tmp_path / "old", (140.0, 143.0, 146.0), skill=0)
    new = write_side(tmp_path / "new", (170.0, 172.0, 175.0), skill=0)
    assert main(["compare", str(old), str(new), "--json", "--fail-on-regression"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert errors(out, schema("compare")) == []
    CompareOut.model_validate(out)
    time = next(c for c in out["changes"] if c["metric"] == "train time (s)")
    assert time["regression"] and time["n_old"] == 3 and time["conditions_new"]["timing"] == "timed (guard)"
    assert out["exit_status"] == 1 and out["unlike"] == []
