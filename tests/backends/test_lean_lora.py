"""The lean LoRA forward: bit for bit PEFT's loss and gradients where it applies, PEFT's own forward elsewhere."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
import torch

from harness.backends import hf
from harness.backends.lean_lora import lean_layers, lean_lora_forward
from harness.config import load_setup
from harness.runtime import Runtime


def _model(tiny_model_dir: Path, *settings: str) -> torch.nn.Module:
    setup = load_setup(None, [f"model.source={tiny_model_dir}", *settings])
    model, _ = hf.load(
        setup, tiny_model_dir, Runtime("cpu", "bf16")
    )  # bf16 base: fp32 adapters, as a run has
    model = hf.wrap_lora(model, setup)
    model.config.use_cache = False
    model.train()
    return model


def _loss_and_grads(model: torch.nn.Module, autocast: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 200, (3, 16), generator=generator)
    mask = torch.ones_like(ids)
    mask[0, 10:] = 0
    model.zero_grad(set_to_none=True)
    cast = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    with cast:
        loss = model(input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100)).loss
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters() if p.requires_grad]


@pytest.mark.parametrize("autocast", [True, False], ids=["autocast (GPU runs)", "no autocast (CPU runs)"])
@pytest.mark.parametrize("alpha", ["16.0", "32.0"], ids=["scaling 1", "scaling 2"])
def test_lean_forward_gives_peft_loss_and_gradients_bit_for_bit(
    tiny_model_dir: Path, autocast: bool, alpha: str
) -> None:
    model = _model(tiny_model_dir, "lora.rank=16", f"lora.alpha={alpha}")
    assert next(p for p in model.parameters() if p.requires_grad).dtype == torch.float32
    peft_loss, peft_grads = _loss_and_grads(model, autocast)
    with lean_lora_forward(model) as lean:
        assert lean == len(lean_layers(model)) == 7 * model.config.num_hidden_layers
        loss, grads = _loss_and_grads(model, autocast)
    assert torch.equal(loss, peft_loss)
    assert len(grads) == len(peft_grads) and all(
        torch.equal(a, b) for a, b in zip(grads, peft_grads, strict=True)
    )
    assert all("forward" not in vars(layer) for layer, _ in lean_layers(model))  # put back


def test_layers_it_cannot_compute_exactly_keep_pefts_forward(tiny_model_dir: Path) -> None:
    assert lean_layers(_model(tiny_model_dir, "lora.dropout=0.1")) == []  # dropout draws randomness
    model = _model(tiny_model_dir)
    with lean_lora_forward(model, enabled=False) as lean:
        assert lean == 0
    # A merged adapter (as eval may decode) goes through PEFT's forward, which knows it is merged.
    model.eval()
    ids = torch.randint(5, 200, (1, 8), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        unmerged = model(input_ids=ids).logits
        with lean_lora_forward(model):
            model.merge_adapter()
            merged = model(input_ids=ids).logits
            model.unmerge_adapter()
    assert torch.allclose(merged.float(), unmerged.float(), atol=0.1)


def test_eval_decodes_the_same_answers_through_the_lean_forward(tiny_model_dir: Path, monkeypatch) -> None:
    """Eval (unmerged, as on a CPU) goes through the lean forward and decodes exactly PEFT's answers."""
    from test_hf import tiny_sql_examples

    from harness.run import evaluate
    from harness.tasks.encoding import end_of_turn, render_prompt

    setup = load_setup(
        None, [f"model.source={tiny_model_dir}", "eval.merge_adapter=false", "eval.max_new_tokens=12"]
    )
    model, tokenizer = hf.load(setup, tiny_model_dir, Runtime("cpu", "bf16"))
    model = hf.wrap_lora(model, setup)
    for name, param in model.named_parameters():
        if "lora_B" in name:  # as after training: the adapter changes the sums (a zero B would hide a slip)
            param.data.normal_(0, 0.5, generator=torch.Generator().manual_seed(len(name)))
    model.eval()
    examples = tiny_sql_examples(6)
    prompts = [render_prompt(tokenizer, ex) for ex in examples]
    batch = evaluate.eval_batch_size(setup.eval.batch_size, "cpu")  # as answer_questions batches them
    with evaluate.adapter_autocast(model, "cpu", "bf16"):  # as answer_questions decodes a bf16 adapter
        peft_answers = evaluate.generate_answers(model, tokenizer, prompts, batch_size=batch, max_new_tokens=12,
                                                 end_of_turn=end_of_turn(tokenizer))  # fmt: skip
    entered: list[int] = []
    original = evaluate.lean_lora_forward

    @contextlib.contextmanager
    def watched(model: torch.nn.Module, enabled: bool = True):
        with original(model, enabled) as lean:
            entered.append(lean)
            yield lean

    monkeypatch.setattr(evaluate, "lean_lora_forward", watched)
    assert evaluate.answer_questions(model, tokenizer, examples, setup) == peft_answers
    assert entered == [7 * model.config.num_hidden_layers]


def test_the_training_spans_a_benchmark_enters_are_the_runs(tiny_model_dir: Path) -> None:
    # dev/profile_cpu_step.py steps a trainer itself inside hf.training_spans: it must time the lean
    # forward the run's steps take, and leave PEFT's forward behind it.
    from types import SimpleNamespace

    setup = load_setup(None, [f"model.source={tiny_model_dir}"])
    model = _model(tiny_model_dir)
    with hf.training_spans(model, SimpleNamespace(lean_steps=True), setup, "none") as graph_stats:
        assert graph_stats is None
        assert all("forward" in vars(layer) for layer, _ in lean_layers(model))
    assert all("forward" not in vars(layer) for layer, _ in lean_layers(model))
    with hf.training_spans(model, SimpleNamespace(lean_steps=False), setup, "none"):
        assert all("forward" not in vars(layer) for layer, _ in lean_layers(model))
