"""eval.adapter: a trained adapter scored on a base loaded again, nothing trained — in the precision it
was trained in (same answers as its own run), and in another (the story's 4-bit → bf16 question)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config import load_setup
from harness.errors import UserError
from harness.results import load_record
from harness.run.parent import RunOptions, run_setup


def _setup(model: Path, data: Path, *extra: str):
    return load_setup(None, [
        f"model.source={model}", f"data.source={data}", "precision=fp32", "data.test_size=6", "recipe.steps=6",
        "recipe.batch_size=4",
        "recipe.lr=1e-2", "eval.max_new_tokens=6", "checks.smoke.enabled=false", "checks.preflight=false", *extra,
    ])  # fmt: skip


@pytest.fixture(scope="module")
def trained(tiny_model_dir: Path, sql_rows_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("results")
    record, path = run_setup(
        _setup(tiny_model_dir, sql_rows_file), RunOptions(results_dir=results, isolate=False)
    )
    assert record.status == "ok", record.reason
    assert path.with_name(path.stem + ".adapter").is_dir()
    return path


def _answers(record_file: Path) -> list[str]:
    lines = [
        json.loads(line) for line in record_file.with_name(record_file.stem + ".predictions.jsonl").open()
    ]
    return [line["prediction"] for line in sorted(lines, key=lambda line: line["index"])]


def test_scoring_the_adapter_on_its_own_precision_gives_its_answers(
    trained: Path, tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    setup = _setup(tiny_model_dir, sql_rows_file, f"eval.adapter={trained}", "name=tiny-rescored")
    record, path = run_setup(setup, RunOptions(results_dir=tmp_path, isolate=False))
    assert record.status == "ok", record.reason
    assert record.train is None and record.timings.train_s is None  # nothing trained
    assert record.model is not None and record.model.adapter is not None
    assert record.model.adapter["trained_precision"] == "fp32" and record.model.precision == "fp32"
    assert _answers(path) == _answers(trained)
    assert record.trained == load_record(trained).trained.model_copy(update={"eval_s": record.trained.eval_s})


def test_scoring_on_another_precision_records_both(
    trained: Path, tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    setup = _setup(
        tiny_model_dir, sql_rows_file, f"eval.adapter={trained}", "precision=bf16", "name=tiny-on-bf16"
    )
    record, _ = run_setup(setup, RunOptions(results_dir=tmp_path, isolate=False))
    assert record.status == "ok", record.reason
    assert record.model.precision == "bf16" and record.model.adapter["trained_precision"] == "fp32"
    assert record.trained is not None and record.trained.n == 6


def test_a_wrong_adapter_is_named_before_anything_loads(
    trained: Path, tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "nothing.json"
    with pytest.raises(UserError, match=r"eval\.adapter: .*nothing\.json: not an adapter folder"):
        run_setup(
            _setup(tiny_model_dir, sql_rows_file, f"eval.adapter={missing}"), RunOptions(results_dir=tmp_path)
        )
    elsewhere = tmp_path / "same-weights-other-name"
    elsewhere.symlink_to(tiny_model_dir)
    other_model = _setup(elsewhere, sql_rows_file, f"eval.adapter={trained}")
    with pytest.raises(
        UserError,
        match=r"eval\.adapter: .* was trained on model .*tiny.*, this setup loads .*other-name'; set model\.source",
    ):
        run_setup(other_model, RunOptions(results_dir=tmp_path))
    assert not list(tmp_path.rglob("seed-*.json"))  # nothing written for a user mistake


def test_scoring_an_adapter_needs_eval_and_the_hf_backend() -> None:
    with pytest.raises(UserError, match=r"eval\.adapter: scoring an adapter needs eval\.enabled = true"):
        load_setup(None, ["eval.adapter=x.json", "eval.enabled=false"])
    with pytest.raises(
        UserError, match=r"eval\.adapter: .* got backend 'unsloth' with gpus = 1; set backend = 'hf'"
    ):
        load_setup(None, ["eval.adapter=x.json", "backend=unsloth"])
