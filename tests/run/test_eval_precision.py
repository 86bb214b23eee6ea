"""A trained model decodes as `eval.precision` says, and as its adapter scored later (eval.adapter) does.

The Trainer's mixed precision (accelerate) wraps the model's forward in autocast and left it wrapped after
training: on the H200 the "fp32" eval of every trained model multiplied in bf16 (found when the CUDA-graph
decode's static cache met fp32 keys and bf16 values), while an adapter loaded to be scored decoded without
autocast. Trained here on the tiny model in bf16 on a CPU, as a GPU's run trains."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harness.backends import hf
from harness.config import load_setup
from harness.run.evaluate import answer_questions
from harness.run.seeding import seed_run
from harness.runtime import Runtime
from tests.backends.test_hf import tiny_sql_examples

RUNTIME = Runtime("cpu", "bf16")


def setup_for(tiny_model_dir: Path, precision: str):
    return load_setup(None, [
        f"model.source={tiny_model_dir}", "device=cpu", "precision=bf16", "recipe.steps=3", "recipe.batch_size=2",
        "recipe.warmup_steps=0", "recipe.lr=1e-2", "recipe.compile=none", "checks.preflight=false",
        f"eval.precision={precision}", "eval.max_new_tokens=6",
    ])  # fmt: skip


@pytest.fixture(scope="module")
def trained(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[object, object, Path]:
    """The tiny model trained 3 steps in bf16, and its adapter saved."""
    import os

    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("trainer"))  # the trainer's scratch folder
    try:
        seed_run(0)
        model, tokenizer = hf.load(setup_for(tiny_model_dir, "train"), tiny_model_dir, RUNTIME)
        outcome = hf.train(
            model, tokenizer, tiny_sql_examples(8), setup_for(tiny_model_dir, "train"), RUNTIME
        )
    finally:
        os.chdir(here)
    adapter = tmp_path_factory.mktemp("adapter")
    outcome.model.save_pretrained(str(adapter))
    return outcome.model, tokenizer, adapter


def decoded(model: object, tokenizer: object, setup: object) -> tuple[list[str], set, set]:
    """The answers, whether autocast was on (and its dtype) in each decoder layer's forward, and the dtypes
    of the value projections' base products."""
    autocast, products = set(), set()
    layers = [m for m in model.modules() if type(m).__name__ == "LlamaDecoderLayer"]
    bases = [m for name, m in model.named_modules() if name.endswith("v_proj.base_layer")]
    hooks = [
        *(layer.register_forward_pre_hook(lambda *_: autocast.add(_autocast_state())) for layer in layers),
        *(base.register_forward_hook(lambda m, i, out: products.add(out.dtype)) for base in bases),
    ]
    try:
        answers = answer_questions(model, tokenizer, tiny_sql_examples(4), setup)
    finally:
        for hook in hooks:
            hook.remove()
    return answers, autocast, products


def _autocast_state() -> tuple[bool, torch.dtype | None]:
    on = torch.is_autocast_enabled("cpu")
    return on, torch.get_autocast_dtype("cpu") if on else None


def test_a_trained_models_fp32_eval_multiplies_in_fp32(trained, tiny_model_dir: Path) -> None:
    model, tokenizer, _ = trained
    _, autocast, products = decoded(model, tokenizer, setup_for(tiny_model_dir, "fp32"))
    assert autocast == {(False, None)} and products == {torch.float32}
    assert next(model.parameters()).dtype == torch.bfloat16  # put back after the lifted eval


def test_a_trained_model_answers_as_its_adapter_scored_later(trained, tiny_model_dir: Path) -> None:
    model, tokenizer, adapter = trained
    setup = setup_for(tiny_model_dir, "train")
    answers, autocast, _ = decoded(model, tokenizer, setup)
    base, _ = hf.load(setup, tiny_model_dir, RUNTIME)
    later, later_autocast, _ = decoded(hf.attach_adapter(base, adapter), tokenizer, setup)
    # In bf16, the adapter's fp32 weights multiply in bf16 as in training: both ways alike.
    assert autocast == later_autocast == {(True, torch.bfloat16)}
    assert answers == later


def test_the_baseline_decodes_without_autocast(tiny_model_dir: Path) -> None:
    setup = setup_for(tiny_model_dir, "train")
    base, tokenizer = hf.load(setup, tiny_model_dir, RUNTIME)
    _, autocast, products = decoded(base, tokenizer, setup)
    assert autocast == {(False, None)} and products == set()  # no adapter: no base_layer either
