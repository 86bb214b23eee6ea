"""Length-sorted micro-batches: the same rows per step, the same loss and gradients, less padding."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from harness.backends import hf, microbatch
from harness.config import load_setup
from harness.run.seeding import seed_run
from harness.runtime import Runtime
from harness.tasks.sql.data import SqlExample


def test_split_sorted_pads_least_and_keeps_every_row_once() -> None:
    lengths = [153, 91, 60, 104, 129, 88, 70, 95]
    groups = microbatch.split_sorted(lengths, 2)
    assert sorted(i for g in groups for i in g) == list(range(8))
    padded = sum(len(g) * max(lengths[i] for i in g) for g in groups)
    # Brute force over every cut of the sorted rows into two groups: none pads less.
    order = sorted(lengths)
    best = min(cut * order[cut - 1] + (8 - cut) * order[-1] for cut in range(1, 8))
    assert padded == best < 8 * max(lengths)
    assert microbatch.split_sorted([5, 5, 5], 3) == [[0, 1, 2]]  # equal rows: one group, nothing to save
    assert microbatch.split_sorted([7], 4) == [[0]]


def _batch(lengths: list[int], *, left: bool = False) -> dict[str, torch.Tensor]:
    width = max(lengths)
    mask = torch.zeros(len(lengths), width, dtype=torch.long)
    for row, n in enumerate(lengths):
        if left:
            mask[row, width - n :] = 1
        else:
            mask[row, :n] = 1
    ids = torch.arange(len(lengths) * width).reshape(len(lengths), width) * mask
    return {"input_ids": ids, "attention_mask": mask, "labels": torch.where(mask.bool(), ids, -100)}


def test_micro_batches_trim_right_padding_only() -> None:
    batch = _batch([3, 9, 4, 8])
    pieces = microbatch.micro_batches(batch, 2)
    assert [tuple(p["input_ids"].shape) for p in pieces] == [(2, 4), (2, 9)]
    assert sorted(int(n) for p in pieces for n in p["attention_mask"].sum(1)) == [3, 4, 8, 9]  # no token lost
    # Left padding (generation's) and padding-free batches pass through whole.
    assert microbatch.micro_batches(_batch([3, 9], left=True), 2)[0]["input_ids"].shape == (2, 9)
    free = {"input_ids": torch.ones(1, 12, dtype=torch.long), "position_ids": torch.arange(12)[None]}
    assert microbatch.micro_batches(free, 2) == [free]


def _examples() -> list[SqlExample]:
    return [
        SqlExample(question=f"Name in {1990 + i}?" + " Please." * (i % 4), context=f"CREATE TABLE t{i} (name VARCHAR, year VARCHAR)",
                   answer=f'SELECT name FROM t{i} WHERE year = "{1990 + i}"' + " AND name IS NOT NULL" * (i % 3))
        for i in range(16)
    ]  # fmt: skip


def _losses(tiny_model_dir: Path, parts: int) -> list[float]:
    setup = load_setup(None, [
        f"model.source={tiny_model_dir}", "device=cpu", "precision=fp32", "recipe.steps=4", "recipe.batch_size=4",
        "recipe.warmup_steps=0", "recipe.lr=1e-2", "checks.preflight=false", f"recipe.micro_batches={parts}",
    ])  # fmt: skip
    runtime = Runtime("cpu", "fp32", micro_batches=parts)
    seed_run(setup.recipe.seed)  # as the recipe's top does: both trainings start from the same adapter
    model, tokenizer = hf.load(setup, tiny_model_dir, runtime)
    return hf.train(model, tokenizer, _examples(), setup, runtime).losses


def test_micro_batched_training_is_the_same_training(tiny_model_dir: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the trainer's scratch folder
    whole, split = _losses(tiny_model_dir, 1), _losses(tiny_model_dir, 2)
    # Same rows in every step and the batch's own normalisation: equal to float rounding, step by step,
    # with a learning rate that moves the weights (a mean per piece would be off by far more).
    assert split == pytest.approx(whole, rel=1e-5) and whole[0] != pytest.approx(whole[-1], rel=1e-3)


def test_a_copy_of_the_trainer_runs_its_own_step(tiny_model_dir: Path, tmp_path: Path, monkeypatch) -> None:
    # The accumulation-parity check probes a shallow copy; installed by class, the copy's step is its own.
    monkeypatch.chdir(tmp_path)
    setup = load_setup(None, [f"model.source={tiny_model_dir}", "device=cpu", "precision=fp32", "recipe.batch_size=4"])
    runtime = Runtime("cpu", "fp32", micro_batches=2)
    model, tokenizer = hf.load(setup, tiny_model_dir, runtime)
    trainer = hf.build_trainer(hf.wrap_lora(model, setup), tokenizer, _examples(), setup, runtime, [])
    probe = copy.copy(trainer)
    assert type(probe) is type(trainer) and type(trainer).__name__.endswith("MicroBatched")
    assert probe.training_step.__self__ is probe
