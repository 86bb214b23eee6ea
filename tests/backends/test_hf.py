"""The hf backend's loading options, on the tiny seeded model."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harness.backends import hf
from harness.config import load_setup
from harness.run.seeding import seed_run
from harness.runtime import Runtime, resolve_runtime


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_attention_implementation_is_the_setups(tiny_model_dir: Path, attention: str) -> None:
    setup = load_setup(None, [f"model.source={tiny_model_dir}", f"model.attention={attention}"])
    model, _ = hf.load(setup, tiny_model_dir, resolve_runtime("cpu", "fp32", setup.model.attention))
    assert model.config._attn_implementation == attention
    # The default resolves per host (harness/runtime.py, tests/test_runtime.py); fingerprint version 3.
    assert load_setup(None).model.attention == "auto"


def test_steady_step_time_leaves_the_warm_up_out():
    from harness.backends.common import steady_step_seconds

    # 20 steps: the first takes 5 s (a compile), the others 0.1 s or 0.3 s.
    ends = [0.0, 5.0]
    for i in range(19):
        ends.append(ends[-1] + (0.1 if i % 3 else 0.3))
    assert steady_step_seconds(ends) == pytest.approx(0.1)
    assert steady_step_seconds([0.0, 2.0]) is None  # one step: nothing left after the warm-up
    assert steady_step_seconds([]) is None


def tiny_sql_examples(n: int) -> list:
    """`n` distinct one-table questions of three answer lengths (so batches pad)."""
    from harness.tasks.sql.data import SqlExample

    return [
        SqlExample(question=f"Name in {1990 + i}?", context=f"CREATE TABLE t{i} (name VARCHAR, year VARCHAR)",
                   answer=f'SELECT name FROM t{i} WHERE year = "{1990 + i}"' + " AND name IS NOT NULL" * (i % 3))
        for i in range(n)
    ]  # fmt: skip


def _train_tiny(tiny_model_dir: Path, compile_: str) -> tuple[object, list[float]]:
    setup = load_setup(None, [
        f"model.source={tiny_model_dir}", "device=cpu", "precision=fp32", "recipe.steps=4", "recipe.batch_size=2",
        "recipe.warmup_steps=0", "recipe.lr=1e-2", f"recipe.compile={compile_}", "checks.preflight=false",
    ])  # fmt: skip
    runtime = Runtime("cpu", "fp32")
    examples = tiny_sql_examples(8)
    seed_run(setup.recipe.seed)  # as the recipe's top does: every training starts from the same adapter
    model, tokenizer = hf.load(setup, tiny_model_dir, runtime)
    outcome = hf.train(model, tokenizer, examples, setup, runtime)
    return outcome.model, outcome.losses


def test_compiled_layers_train_the_same_and_are_put_back(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the trainer's scratch folder
    _, eager = _train_tiny(tiny_model_dir, "none")
    model, compiled = _train_tiny(tiny_model_dir, "layers")
    # Same math, fused kernels: equal to float rounding, step by step, with a learning rate that moves it.
    assert compiled == pytest.approx(eager, rel=1e-4) and eager[0] != pytest.approx(eager[-1], rel=1e-3)
    layers = [m for m in model.modules() if type(m).__name__.endswith("DecoderLayer")]
    assert layers and all(layer._compiled_call_impl is None for layer in layers)  # eval decodes eager


def test_compile_needs_decoder_layers() -> None:
    from harness.errors import UserError

    with pytest.raises(UserError, match=r"recipe\.compile: 'layers' found no decoder layer .* in Linear"):
        hf.compiled_layers(torch.nn.Linear(2, 2), True).__enter__()


def test_the_sync_free_trainer_trains_as_sft_trainer_does(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    """Same losses step by step as TRL's own SFTTrainer (its metrics and per-step token reads left out),
    and the same non-padding token count as Trainer's `include_num_input_tokens_seen`."""
    from trl import SFTTrainer

    monkeypatch.chdir(tmp_path)
    setup = load_setup(None, [
        f"model.source={tiny_model_dir}", "device=cpu", "precision=fp32", "recipe.steps=4", "recipe.batch_size=2",
        "recipe.grad_accum=2", "recipe.warmup_steps=0", "recipe.lr=1e-2", "checks.preflight=false",
    ])  # fmt: skip
    runtime = Runtime("cpu", "fp32")
    examples = tiny_sql_examples(16)

    def losses_and_tokens(reference: bool) -> tuple[list[float], int]:
        seed_run(setup.recipe.seed)  # as the recipe's top does: both trainings start from the same adapter
        model, tokenizer = hf.load(setup, tiny_model_dir, runtime)
        model = hf.wrap_lora(model, setup)
        trainer = hf.build_trainer(model, tokenizer, examples, setup, runtime, [])
        if reference:  # TRL's own loss path and Trainer's own token count, on the very same arguments
            trainer.args.include_num_input_tokens_seen = "non_padding"
            trainer = SFTTrainer(model=model, args=trainer.args, train_dataset=trainer.train_dataset,
                                 processing_class=tokenizer)  # fmt: skip
        trainer.train()
        losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
        tokens = trainer.state.num_input_tokens_seen if reference else trainer.tokens_seen()
        return losses, int(tokens)

    ours, our_tokens = losses_and_tokens(reference=False)
    theirs, their_tokens = losses_and_tokens(reference=True)
    assert len(ours) == 4 and ours == pytest.approx(theirs, rel=1e-5)
    assert our_tokens == their_tokens > 0


def test_wrapped_packing_fills_every_row_to_max_length(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    """recipe.packing = 'wrapped': every batch is batch_size × max_length real tokens (no padding), and
    the sync-free trainer counts exactly those; packed rows still train (the loss moves)."""
    monkeypatch.chdir(tmp_path)
    setup = load_setup(None, [
        f"model.source={tiny_model_dir}", "device=cpu", "precision=fp32", "recipe.steps=3", "recipe.batch_size=2",
        "recipe.max_length=64", "recipe.packing=wrapped", "recipe.warmup_steps=0", "recipe.lr=1e-2",
        "checks.preflight=false", "eval.enabled=false",
    ])  # fmt: skip
    runtime = Runtime("cpu", "fp32")
    examples = tiny_sql_examples(24)
    model, tokenizer = hf.load(setup, tiny_model_dir, runtime)
    trainer = hf.build_trainer(hf.wrap_lora(model, setup), tokenizer, examples, setup, runtime, [])
    batch = next(iter(trainer.get_train_dataloader()))
    assert tuple(batch["input_ids"].shape) == (2, 64)
    assert "attention_mask" not in batch or bool(batch["attention_mask"].all())
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert trainer.tokens_seen() == 3 * 2 * 64 and len(losses) == 3 and losses[0] != pytest.approx(losses[-1])


@pytest.mark.parametrize(("field", "value"), [("eval.enabled", "true"), ("checks.preflight", "true")])
def test_packing_is_refused_where_a_score_or_check_would_read_it(field: str, value: str) -> None:
    from harness.errors import UserError

    others = {"eval.enabled": "false", "checks.preflight": "false"}
    others[field] = value
    with pytest.raises(
        UserError, match=rf"recipe\.packing: 'wrapped' .* {field} = True .* recipe\.packing = 'none'"
    ):
        load_setup(None, ["recipe.packing=wrapped", *(f"{k}={v}" for k, v in others.items())])
