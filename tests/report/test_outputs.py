"""`report --json` and `compare --json`: JSON on stdout that validates against the published, versioned
schemas (harness/report/schemas/<name>-<version>.schema.json), every claim with its status, numbers, n
and conditions, figures keyed by identifiers with units, the comparisons with their tests; a refusal in
--json mode is JSON too. The schemas are the models' own (regenerate with `python -m harness.report.outputs`);
real outputs are checked by tests/report/schema_check.py and, where installed, by jsonschema itself."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
from pathlib import Path

import pytest
from builders import write_story_results
from schema_check import errors

from harness.cli import main
from harness.report.outputs import PUBLISHED, CompareOut, ErrorOut, ReportOut, schema_path, schema_text

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"


IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]*$")


def schema(name: str) -> dict:  # type: ignore[type-arg]
    return json.loads(schema_path(name).read_text(encoding="utf-8"))


def validated(instance: dict, name: str) -> dict:  # type: ignore[type-arg]
    """`instance`, checked against the published schema by both validators (jsonschema where installed:
    CI installs it with its linters)."""
    assert errors(instance, schema(name)) == []
    with contextlib.suppress(ImportError):
        import jsonschema

        jsonschema.Draft202012Validator(schema(name)).validate(instance)
    return instance


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_schemas_are_the_models_own(name: str) -> None:
    assert schema_path(name).read_text(encoding="utf-8") == schema_text(PUBLISHED[name][0])


@pytest.fixture(scope="module")
def report_json(tmp_path_factory: pytest.TempPathFactory) -> dict:  # type: ignore[type-arg]
    root = tmp_path_factory.mktemp("json")
    write_story_results(root / "results")
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert (
            main(
                [
                    "report",
                    str(root / "results"),
                    "-o",
                    str(root / "reports"),
                    "--benchmarks",
                    str(BENCHMARKS),
                    "--json",
                ]
            )
            == 0
        )
    return json.loads(stdout.getvalue())  # stdout holds the JSON and nothing else


def test_report_json_validates_and_carries_every_claim(report_json: dict) -> None:  # type: ignore[type-arg]
    validated(report_json, "report")
    ReportOut.model_validate(report_json)
    (amd,) = [s for s in report_json["scorecards"] if s["platform"].startswith("ROCm")]
    assert amd["verdict"].startswith("FAIL") and amd["claims_total"] > 0
    for claim in amd["claims"]:
        assert claim["status"] in ("pass", "fail", "not evaluable") and claim["measured"]
        assert set(claim["n"]) == set(claim["conditions"]) or claim["status"] == "not evaluable"
    gain = next(c for c in amd["claims"] if c["name"] == "gain on every seed")
    assert gain["n"] == {"lora": 3} and gain["conditions"]["lora"]["timing"] == ["timed_guard"]
    assert set(gain["value"]) == {"42", "1234", "3407"}
    setup = next(s for s in amd["setups"] if s["setup"] == "smollm2-135m-lora")
    assert setup["figures"]["train_time_s"]["n"] == 3 and setup["figures"]["mfu_pct"]["window"] == "whole"
    found = setup["conditions"]
    assert (
        found["commits"] == ["7665fa1"] and found["timing"] == ["timed_guard"] and found["window"] == "whole"
    )
    assert found["sharing"] == ["shared_host"] and found["runs_at_once"] > 1 and "×" in found["marks"]
    assert report_json["missing_platforms"] == [
        "No NVIDIA GPU record yet (CUDA): no claim of the suite has been judged on one."
    ]


def test_the_validator_catches_a_broken_output(report_json: dict) -> None:  # type: ignore[type-arg]
    broken = json.loads(json.dumps(report_json))
    del broken["scorecards"][0]["claims"][0]["status"]
    broken["scorecards"][0]["setups"][0]["runs"] = "three"
    broken["format"] = "lorabench-report/1"  # an older format is not this schema's
    next(iter(broken["scorecards"][0]["setups"][0]["figures"].values()))["mean"] = "10 s"  # a number as text
    found = errors(broken, schema("report"))
    assert any("missing 'status'" in e for e in found)
    assert any("runs: str is not integer" in e for e in found)
    assert any("format" in e for e in found)
    assert any("mean: str is not number" in e for e in found)


def test_figures_are_keyed_by_identifiers_with_units(report_json: dict) -> None:  # type: ignore[type-arg]
    keys = {k for card in report_json["scorecards"] for s in card["setups"] for k in s["figures"]}
    assert keys and all(IDENTIFIER.match(k) for k in keys)
    assert {"exact_match_pct", "semantic_pct", "train_time_s", "peak_vram_gib", "tokens_per_s"} <= keys


def test_report_json_carries_the_comparisons_with_their_tests(report_json: dict) -> None:  # type: ignore[type-arg]
    (amd,) = [s for s in report_json["scorecards"] if s["platform"].startswith("ROCm")]
    (qlora,) = [c for c in amd["comparisons"] if c["reference"] == "exp_a/smollm2-135m-lora"]
    # The scorecard's row: "0.75× [0.73–0.77] ×3?", "+0.0", "4 / 4 of 72 (seeds 42, 1234, 3407)", "not shown"
    assert (
        qlora["compared"] == ["precision: 4bit vs bf16 (auto)"]
        and qlora["differs"] == []
        and qlora["is_like"]
    )
    assert qlora["exact_match"]["only_reference_right"] == qlora["exact_match"]["only_setup_right"] == 4
    assert qlora["exact_match"]["questions"] == 72 and qlora["exact_match"]["seeds"] == [42, 1234, 3407]
    assert qlora["equivalence"]["paired_seeds"] == 3 and qlora["equivalence"]["is_equivalent"] is False
    assert f"{qlora['speedup_train_time']['ratio']:.2f}" == "0.75"
    speed = qlora["speedup_train_time"]
    assert (
        speed["n_reference"] == speed["n_setup"] == 3
        and speed["ci95_low"] <= speed["ratio"] <= speed["ci95_high"]
    )


# Every command that has --json, each refused by a path that is not there.
REFUSED = {
    "report": ["report", "{absent}", "-o", "{tmp}/r"],
    "compare": ["compare", "{absent}", "{absent}"],
    "misses": ["misses", "{absent}"],
    "run": ["run", "{absent}.toml"],
    "checks": ["checks", "{absent}.toml"],
    "guard": ["guard", "--config", "{absent}.toml"],
    "doctor": ["doctor", "--stack", "absent"],
    "inspect": ["inspect", "{absent}"],
    "export": ["export", "{absent}", "-o", "{tmp}/out"],
    "stacks": ["stacks", "verify", "absent"],
}


@pytest.mark.parametrize("command", sorted(REFUSED))
def test_a_refusal_in_json_mode_is_json_on_stdout(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [part.format(absent=tmp_path / "absent", tmp=tmp_path) for part in REFUSED[command]]
    assert main([*argv, "--json"]) == 2
    captured = capsys.readouterr()
    refusal = validated(json.loads(captured.out), "error")
    assert refusal["exit_code"] == 2 and "absent" in refusal["error"] and refusal["error"] in captured.err
    ErrorOut.model_validate(refusal)
    assert main(argv) == 2
    assert capsys.readouterr().out == ""  # without --json: the line on stderr only


def test_every_command_with_json_is_tried_for_its_refusal() -> None:
    from harness.cli import build_parser

    def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return found[0].choices if found else {}

    def takes_json(parser: argparse.ArgumentParser) -> bool:  # itself, or one of its own subcommands
        return "--json" in parser._option_string_actions or any(map(takes_json, subcommands(parser).values()))

    having = {name for name, sub in subcommands(build_parser([])).items() if takes_json(sub)}
    assert having - {"bench"} == set(REFUSED)  # bench's refusals come from pytest and its report step


def test_compare_json_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from test_compare import write_side

    old = write_side(tmp_path / "old", (140.0, 143.0, 146.0), skill=0)
    new = write_side(tmp_path / "new", (170.0, 172.0, 175.0), skill=0)
    assert main(["compare", str(old), str(new), "--json", "--fail-on-regression"]) == 1
    out = validated(json.loads(capsys.readouterr().out), "compare")
    CompareOut.model_validate(out)
    time = next(c for c in out["changes"] if c["metric"] == "train_time_s")
    assert time["regression"] and time["n_old"] == 3 and time["conditions_new"]["timing"] == ["timed_guard"]
    assert {c["metric"] for c in out["changes"]} == {
        "exact_match_pct",
        "train_time_s",
        "tokens_per_s",
        "peak_vram_gib",
        "mfu_pct",
    }
    assert out["exit_status"] == 1 and out["unlike"] == []


def test_compare_refusing_unlike_sides_is_json_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_compare import test_unlike_sides_are_refused_naming_each_difference as unlike

    unlike(tmp_path, capsys)  # writes OLD and NEW, of two host kinds
    assert main(["compare", str(tmp_path / "old"), str(tmp_path / "new"), "--json"]) == 2
    refusal = validated(json.loads(capsys.readouterr().out), "error")
    assert refusal["error"].startswith("OLD and NEW are unlike") and refusal["exit_code"] == 2


def test_report_json_carries_the_index_comparisons_across_hosts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_merged_report import CPU_RUNS, H200_RUNS, artifact

    artifact(tmp_path / "h200", H200_RUNS)
    artifact(tmp_path / "cpu", CPU_RUNS)
    argv = ["report", str(tmp_path / "h200"), str(tmp_path / "cpu"), "-o", str(tmp_path / "r"), "--json"]
    assert main([*argv, "--benchmarks", str(BENCHMARKS)]) == 0
    out = validated(json.loads(capsys.readouterr().out), "report")
    (row,) = out["across"]  # one setup on two hosts: one pair
    assert row["across"] == "exp_a/smollm2-135m-lora" and not row["is_like"]
    assert {row["setup"].split(" · ")[0], row["reference"].split(" · ")[0]} == {
        "nvidia-h200x2",
        "cpu-amd-epyc-2c",
    }
    assert row["speedup_train_time"]["n_reference"] == row["speedup_train_time"]["n_setup"] == 3
    index = (tmp_path / "r/README.md").read_text(encoding="utf-8")
    assert f"| {row['setup']} vs {row['reference']} " in index  # the same pair as the index's table


def test_report_json_carries_the_cross_stack_claims(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_merged_report import test_exp_e_is_judged_across_two_stacks_artifacts as two_stacks

    two_stacks(tmp_path)  # writes one host's records on two stacks, into a/ and b/
    capsys.readouterr()
    argv = ["report", str(tmp_path / "b"), str(tmp_path / "a"), "-o", str(tmp_path / "r2"), "--json"]
    assert main([*argv, "--benchmarks", str(BENCHMARKS)]) == 0
    out = validated(json.loads(capsys.readouterr().out), "report")
    (pair,) = out["stacks"]
    assert (pair["other"], pair["this"]) == ("rocm7.2-hf5.17", "rocm7.2-hf5.5")
    claims = {c["name"]: c for c in pair["claims"]}
    assert claims["accuracy equivalent across stacks"]["status"] == "fail"
    assert claims["time ratio across stacks"]["status"] == "pass"
    assert all(c["conditions"] for c in claims.values() if c["status"] != "not evaluable")
