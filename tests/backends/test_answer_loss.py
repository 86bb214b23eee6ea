"""The answer-token loss (harness/backends/answer_loss.py) against TRL's chunked cross-entropy: the same loss
and gradients on the same inputs, TRL's path where the logits would not fit or the setting is off, and a
real training on the tiny model that learns the same with either."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_hf import tiny_sql_examples
from trl.trainer import sft_trainer

from harness.backends import answer_loss, hf
from harness.config import load_setup
from harness.run.seeding import seed_run
from harness.runtime import Runtime


def _trl() -> object:
    fn = sft_trainer._chunked_cross_entropy_loss
    return fn.args[0] if getattr(fn, "lorabench_answer_loss", False) else fn


def _inputs(valid: int, rows: int = 3, length: int = 40, vocab: int = 300, width: int = 16):
    gen = torch.Generator().manual_seed(valid)
    hidden = torch.randn(rows, length, width, generator=gen, requires_grad=True)
    weight = torch.randn(vocab, width, generator=gen)
    labels = torch.full((rows, length), -100)
    flat = labels.view(-1)
    positions = torch.randperm(rows * length, generator=gen)[:valid]
    flat[positions] = torch.randint(0, vocab, (valid,), generator=gen)
    return hidden, weight, labels


def _loss_and_grad(fn, hidden, weight, labels, **kwargs) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    hidden.grad = None
    loss, _, _, n_valid = fn(hidden, weight, 8, labels=labels, **kwargs)
    loss.backward()
    return loss.detach(), hidden.grad.clone(), n_valid


@pytest.mark.parametrize("valid", [0, 1, 7, 8, 9, 60])
@pytest.mark.parametrize("items", [None, 25])
def test_the_same_loss_and_gradients_as_trls_chunks(valid: int, items: int | None) -> None:
    hidden, weight, labels = _inputs(valid)
    kwargs = {} if items is None else {"num_items_in_batch": torch.tensor(items)}
    ours = _loss_and_grad(
        lambda *a, **k: answer_loss.answer_tokens_loss(_trl(), *a, **k), hidden, weight, labels, **kwargs
    )
    theirs = _loss_and_grad(_trl(), hidden, weight, labels, **kwargs)
    torch.testing.assert_close(ours[0], theirs[0], rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(ours[1], theirs[1], rtol=1e-5, atol=1e-6)
    assert int(ours[2]) == int(theirs[2]) <= valid  # a label at a row's first position has no prediction
    if valid == 0:
        assert float(ours[0]) == pytest.approx(0.0, abs=0)


def test_shifted_labels_softcapping_and_bias_follow_trl() -> None:
    hidden, weight, labels = _inputs(30)
    bias = torch.randn(weight.shape[0])
    kwargs = {
        "shift_labels": labels[:, 1:],
        "final_logit_softcapping": 5.0,
        "logit_scale": 0.5,
        "lm_head_bias": bias,
    }
    hidden = hidden[:, :-1].detach().requires_grad_(True)
    ours = _loss_and_grad(
        lambda *a, **k: answer_loss.answer_tokens_loss(_trl(), *a, **k), hidden, weight, None, **kwargs
    )
    theirs = _loss_and_grad(_trl(), hidden, weight, None, **kwargs)
    torch.testing.assert_close(ours[:2], theirs[:2], rtol=1e-5, atol=1e-6)


def test_over_the_budget_trls_own_path_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def original(*args, **kwargs):
        calls.append(1)
        return _trl()(*args, **kwargs)

    hidden, weight, labels = _inputs(20)
    answer_loss.answer_tokens_loss(original, hidden, weight, 8, labels=labels)
    assert calls == []
    monkeypatch.setattr(answer_loss, "LOGITS_BUDGET_BYTES", 20 * weight.shape[0] * 4 - 1)
    answer_loss.answer_tokens_loss(original, hidden, weight, 8, labels=labels)
    assert calls == [1]


def _train(
    tiny_model_dir: Path, ours: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[float], dict[str, torch.Tensor]]:
    # A budget of 0 bytes sends every batch to TRL's chunked path, as a shape too large for ours does.
    monkeypatch.setattr(answer_loss, "LOGITS_BUDGET_BYTES", answer_loss.LOGITS_BUDGET_BYTES if ours else 0)
    setup = load_setup(None, [
        f"model.source={tiny_model_dir}", "device=cpu", "precision=fp32", "recipe.steps=4", "recipe.batch_size=4",
        "recipe.grad_accum=2", "recipe.warmup_steps=0", "recipe.lr=5e-2", "checks.preflight=false",
    ])  # fmt: skip
    runtime = Runtime("cpu", "fp32")
    seed_run(setup.recipe.seed)
    model, tokenizer = hf.load(setup, tiny_model_dir, runtime)
    model = hf.wrap_lora(model, setup)
    trainer = hf.build_trainer(model, tokenizer, tiny_sql_examples(32), setup, runtime, [])
    assert getattr(sft_trainer._chunked_cross_entropy_loss, "lorabench_answer_loss", False)
    trainer.train()
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    return losses, {k: v.detach().clone() for k, v in model.state_dict().items() if "lora_" in k}


def test_a_training_learns_the_same_with_either_loss(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    ours, theirs = _train(tiny_model_dir, True, monkeypatch), _train(tiny_model_dir, False, monkeypatch)
    assert len(ours[0]) == 4
    assert ours[0] == pytest.approx(theirs[0], rel=1e-5)
    assert ours[1].keys() == theirs[1].keys()
    for name in ours[1]:
        torch.testing.assert_close(ours[1][name], theirs[1][name], rtol=1e-4, atol=1e-6)
