"""Whole runs of the tiny model that diverge, each way the recipe catches: the record says `diverged`, names
the step or what was found, keeps the evidence in `checks`, and reads back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from harness.backends import hf
from harness.checks.adapters import lora_parameters
from harness.config import load_setup
from harness.results import load_record, predictions_path
from harness.run.parent import RunOptions, run_setup
from harness.tasks.encoding import end_of_turn


def tiny_setup(model: Path, data: Path, *extra: str):
    # The smoke's band and fall are its own tests; here they would stop a random-init model first.
    return load_setup(None, [
        f"model.source={model}", f"data.source={data}", "data.test_size=6", "recipe.steps=4", "recipe.batch_size=4",
        "recipe.warmup_steps=0", "eval.max_new_tokens=6", "eval.baseline=false", "checks.preflight=false",
        "checks.smoke.enabled=false", *extra,
    ])  # fmt: skip


def run_inline(setup: Any, tmp_path: Path):
    record, path = run_setup(setup, RunOptions(results_dir=tmp_path, isolate=False, quiet=True))
    assert load_record(path) == record, "a diverged record must read back (JSON has no NaN)"
    return record, path


def trained_then(monkeypatch: pytest.MonkeyPatch, change: Any) -> None:
    """The hf backend's training, then `change(model)` on what it trained: a bug injected after the last step."""
    train = hf.train

    def train_and_change(*args: Any, **kwargs: Any) -> Any:
        outcome = train(*args, **kwargs)
        change(outcome.model)
        return outcome

    monkeypatch.setattr(hf, "train", train_and_change)


def test_huge_learning_rate_is_diverged_at_step_two(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    record, _ = run_inline(tiny_setup(tiny_model_dir, sql_rows_file, "recipe.lr=1e30"), tmp_path)
    assert record.status == "diverged"
    assert record.reason == "divergence: loss is nan at step 2"
    check = record.checks["divergence"]
    assert check.verdict == "fail" and check.evidence["step"] == 2
    assert check.evidence["loss"] == "nan" and check.evidence["grad_norm"] == "nan"
    # Two steps ran; the record's curve keeps the finite one, the check names the NaN.
    assert record.train.steps_done == 2 and len(record.train.loss) == 1
    assert record.trained is None and record.predictions_file is None


def test_nan_adapter_weight_after_training_is_diverged(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def poison(model: Any) -> None:
        _, lora_b = next(iter(lora_parameters(model).values()))
        with torch.no_grad():
            lora_b[0, 0] = float("nan")

    trained_then(monkeypatch, poison)
    record, _ = run_inline(tiny_setup(tiny_model_dir, sql_rows_file), tmp_path)
    assert record.status == "diverged"
    assert record.reason.startswith(
        "adapter_weights: 1 of 28 LoRA weight matrices hold NaN/inf after training"
    )
    assert record.checks["divergence"].verdict == "pass", "every step's loss was finite"
    assert record.checks["adapter_weights"].evidence["non_finite"] == [
        "model.layers.0.self_attn.q_proj.lora_B"
    ]
    assert record.trained is None


def test_a_model_that_only_ends_its_turn_is_diverged(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    eot_id = tokenizer.convert_tokens_to_ids(end_of_turn(tokenizer))

    def only_end_of_turn(model: Any) -> None:
        # Every decoded token becomes end-of-turn (a model that learned to stop at once); nothing else looks wrong.
        push = torch.zeros(model.get_output_embeddings().weight.shape[0])
        push[eot_id] = 1e4
        model.get_output_embeddings().register_forward_hook(lambda _m, _i, logits: logits + push)

    trained_then(monkeypatch, only_end_of_turn)
    record, path = run_inline(tiny_setup(tiny_model_dir, sql_rows_file), tmp_path)
    assert record.status == "diverged"
    assert record.reason == "answers: every one of the 6 answers is empty"
    assert record.checks["answers"].evidence == {"n": 6, "n_empty": 6}
    assert (
        record.checks["divergence"].verdict == "pass" and record.checks["adapter_weights"].verdict == "pass"
    )
    # Scored and kept: the scorecard can show what the run was judged on.
    assert record.trained is not None and record.trained.exact_match == 0
    rows = [json.loads(line) for line in predictions_path(path).read_text().splitlines()]
    assert [r["prediction"] for r in rows] == [""] * 6


def test_clean_run_passes_the_divergence_checks(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    record, _ = run_inline(tiny_setup(tiny_model_dir, sql_rows_file, "recipe.lr=2e-2"), tmp_path)
    assert record.status == "ok", record.reason
    for name in ("divergence", "adapter_weights", "answers"):
        assert record.checks[name].verdict == "pass", (name, record.checks[name])
    assert record.checks["divergence"].evidence["steps"] == 4
    assert record.checks["answers"].evidence["n_empty"] < 6


def test_divergence_checks_can_be_turned_off(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    setup = tiny_setup(
        tiny_model_dir, sql_rows_file, "recipe.lr=1e30", "recipe.steps=2", "checks.divergence.enabled=false"
    )
    record, _ = run_inline(setup, tmp_path)
    assert not {"divergence", "adapter_weights", "answers"} & set(record.checks)
    assert record.status == "ok", "nothing else looks: why the check is on by default"


def test_a_model_mute_before_training_is_not_called_diverged(
    tiny_model_dir: Path, sql_rows_file: Path, tmp_path: Path
) -> None:
    # The random-init tiny model answers nothing before training (greedy picks a stop token) nor after.
    record, _ = run_inline(tiny_setup(tiny_model_dir, sql_rows_file, "eval.baseline=true"), tmp_path)
    assert record.status == "ok", record.reason
    answers = record.checks["answers"]
    assert answers.verdict == "skipped" and answers.evidence["n_empty_before_training"] == 6, answers
