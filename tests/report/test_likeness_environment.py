"""The runtime environment counts in like-for-like: two runs that differ only in an allocator or
thread-pool variable (provenance.environment) are unlike, with the variable named; records made before
the environment was recorded compare as they did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import HOST_AMD, SEEDS, STACK_ROCM, make_record, predictions, write

from harness.cli import main
from harness.report import likeness
from harness.report.groups import LoadedRecord, SetupRuns
from harness.report.tables import comparison_tables
from harness.results import RunRecord

EXPANDABLE = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}


def runs(name: str, environment: dict[str, str] | None, seeds: tuple[int, ...] = (3407,)) -> SetupRuns:
    records = []
    for n, seed in enumerate(seeds):
        record = make_record(
            host=HOST_AMD,
            stack=STACK_ROCM,
            experiment="exp_c_speed",
            setup_name=name,
            seed=seed,
            created=f"2026-12-01T15:5{n}:00+00:00",
        )
        data: dict[str, Any] = record.model_dump()
        if environment is not None:
            data["provenance"] = {**data["provenance"], "environment": environment}
        records.append(LoadedRecord(RunRecord.model_validate(data), Path(f"{name}-{seed}.json")))
    return SetupRuns("exp_c_speed", name, tuple(records))


def test_an_allocator_setting_makes_a_pair_unlike_and_is_named() -> None:
    judged = likeness.judge(runs("packed-liger-expandable", EXPANDABLE), runs("packed-liger", {}))
    assert not judged.is_like
    assert judged.differences == ("environment PYTORCH_CUDA_ALLOC_CONF: expandable_segments:True vs unset",)


def test_the_unlike_table_names_the_variable() -> None:
    pair = (runs("packed-liger", {"OMP_NUM_THREADS": "1"}), runs("packed-liger-expandable", EXPANDABLE))
    tables = comparison_tables([pair])
    assert tables.like is None and tables.unlike is not None
    assert "environment OMP_NUM_THREADS: unset vs 1" in tables.unlike
    assert "environment PYTORCH_CUDA_ALLOC_CONF: expandable_segments:True vs unset" in tables.unlike


def test_the_same_environment_is_like_for_like() -> None:
    assert likeness.judge(runs("a", EXPANDABLE), runs("b", dict(EXPANDABLE))).is_like
    assert likeness.judge(runs("a", {}), runs("b", {})).is_like
    assert likeness.distance(runs("a", EXPANDABLE), runs("b", EXPANDABLE)) == 0


def test_records_made_before_the_environment_was_recorded_compare_as_before() -> None:
    assert likeness.judge(runs("a", None), runs("b", None)).is_like


def test_a_setting_against_a_record_that_did_not_record_it_is_not_known() -> None:
    judged = likeness.judge(runs("a", EXPANDABLE), runs("b", None))
    assert judged.differences == (
        "environment PYTORCH_CUDA_ALLOC_CONF: expandable_segments:True vs not recorded",
    )
    assert likeness.distance(runs("a", EXPANDABLE), runs("b", None)) == 1


def test_seeds_that_ran_in_different_environments_show_every_value() -> None:
    mixed = runs("a", EXPANDABLE, seeds=(3407, 42))
    data = mixed.runs[1].record.model_dump()
    data["provenance"]["environment"] = {}
    mixed = SetupRuns(
        "exp_c_speed", "a", (mixed.runs[0], LoadedRecord(RunRecord.model_validate(data), Path("x")))
    )
    judged = likeness.judge(mixed, runs("b", {}))
    assert judged.differences == (
        "environment PYTORCH_CUDA_ALLOC_CONF: expandable_segments:True / unset vs unset",
    )


def write_side(results: Path, environment: dict[str, str]) -> Path:
    for n, seed in enumerate(SEEDS):
        rows = predictions(seed, 0)
        record = make_record(
            host=HOST_AMD,
            stack=STACK_ROCM,
            experiment="exp-c",
            setup_name="packed-liger",
            seed=seed,
            created=f"2026-11-28T10:0{n}:00+00:00",
            rows=rows,
        )
        data: dict[str, Any] = record.model_dump()
        data["provenance"] = {**data["provenance"], "environment": environment}
        write(results, RunRecord.model_validate(data), rows)
    return results


def test_compare_refuses_sides_that_ran_under_another_allocator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = write_side(tmp_path / "old", {}), write_side(tmp_path / "new", EXPANDABLE)
    assert main(["compare", str(old), str(new)]) == 2
    err = capsys.readouterr().err
    assert "environment PYTORCH_CUDA_ALLOC_CONF: unset vs expandable_segments:True" in err
    assert main(["compare", str(old), str(write_side(tmp_path / "same", {}))]) == 0  # the clean case
