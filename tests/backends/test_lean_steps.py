"""The Trainer without its per-step whole-model walks (harness/backends/lean_steps.py) trains bit for bit as
with them, on the tiny model on CPU, with clipping that bites; and the model is as PEFT made it afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_hf import tiny_sql_examples

from harness.backends import hf
from harness.backends.lean_steps import lean_module_walks
from harness.config import load_setup
from harness.run.seeding import seed_run
from harness.runtime import Runtime


def _train(
    tiny_model_dir: Path, lean: bool
) -> tuple[list[float], list[float], dict[str, torch.Tensor], float]:
    setup = load_setup(None, [
        f"model.source={tiny_model_dir}", "device=cpu", "precision=fp32", "recipe.steps=5", "recipe.batch_size=2",
        "recipe.grad_accum=2", "recipe.warmup_steps=0", "recipe.lr=5e-2", "checks.preflight=false",
    ])  # fmt: skip
    runtime = Runtime("cpu", "fp32")
    seed_run(setup.recipe.seed)  # as the recipe's top does: both trainings start from the same adapter
    model, tokenizer = hf.load(setup, tiny_model_dir, runtime)
    model = hf.wrap_lora(model, setup)
    trainer = hf.build_trainer(model, tokenizer, tiny_sql_examples(16), setup, runtime, [])
    trainer.lean_steps = lean
    trainer.args.max_grad_norm = 0.05  # small enough that every step clips: the clipping path matters
    with lean_module_walks(model, lean):
        trainer.train()
    assert "train" not in vars(model) and "zero_grad" not in vars(model)  # put back after training
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    weights = {k: v.detach().clone() for k, v in model.state_dict().items() if "lora_" in k}
    return [e["loss"] for e in logs], [e["grad_norm"] for e in logs], weights, trainer.state.total_flos


def test_lean_steps_train_bit_for_bit_as_the_trainer_does(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    lean = _train(tiny_model_dir, lean=True)
    plain = _train(tiny_model_dir, lean=False)
    assert len(lean[0]) == 5 and lean[0] == plain[0] and lean[1] == plain[1]
    assert all(norm > 0.05 for norm in plain[1])  # clipped on every step
    assert lean[2].keys() == plain[2].keys() and all(torch.equal(lean[2][k], plain[2][k]) for k in lean[2])
    assert lean[3] == plain[3] > 0  # the FLOP counter says the same


def test_train_mode_still_reaches_every_module_after_eval() -> None:
    model = torch.nn.Sequential(
        torch.nn.Linear(2, 2), torch.nn.Dropout(0.5), torch.nn.Sequential(torch.nn.Linear(2, 2))
    )
    with lean_module_walks(model):
        model.eval()
        assert not any(m.training for m in model.modules())
        model.train()
        assert all(m.training for m in model.modules())
        model[0].weight.grad = torch.ones(2, 2)
        model.zero_grad()
        assert model[0].weight.grad is None
        model[0].weight.grad = torch.ones(2, 2)
        model.zero_grad(set_to_none=False)
        assert torch.equal(model[0].weight.grad, torch.zeros(2, 2))
    assert vars(model).get("train") is None


def test_train_mode_reaches_layers_left_in_eval_under_a_training_top() -> None:
    """As from_pretrained and PEFT leave a model: its top module's flag on, its layers in eval mode. The
    first train() of the span must walk them all (the trainer's first step), or they train in eval mode."""
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5))
    model[0].eval()
    model[1].eval()
    assert model.training and not model[1].training
    with lean_module_walks(model):
        model.train()
        assert all(m.training for m in model.modules())
        model[1].eval()  # only ever through the top in a run; here by hand, to show the walk is skipped now
        model.train()
        assert not model[1].training


@pytest.mark.parametrize("lean", [True, False])
def test_a_frozen_parameter_is_left_as_it_was(lean: bool) -> None:
    """Only the trainable parameters are zeroed: a frozen one never has a gradient in training; were one
    given one by hand, the lean zero_grad leaves it (the reason the patch is for the trainer's span only)."""
    model = torch.nn.Linear(2, 2)
    model.bias.requires_grad_(False)
    with lean_module_walks(model, lean):
        model.weight.grad, model.bias.grad = torch.ones(2, 2), torch.ones(2)
        model.zero_grad()
    assert model.weight.grad is None and (model.bias.grad is not None) is lean
