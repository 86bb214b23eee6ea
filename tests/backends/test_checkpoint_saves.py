"""When a run saves its resumable checkpoints (recipe.checkpoint_every): by default after each minute of
training, or every N steps where the setup says N; never at the last step, whose adapter and record follow
at once. The trainer is the real one, on the tiny model; the saves are read from the folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hf import tiny_sql_examples

from harness.backends import checkpoint, hf
from harness.config import load_setup
from harness.run.seeding import seed_run
from harness.runtime import Runtime

STEPS = 4


def _train(tiny_model_dir: Path, folder: Path, *extra: str) -> list[int]:
    """The steps at which a run of STEPS steps saved (each save the newest complete one, then the older go:
    the saved steps are read from every save's own state file as it was written)."""
    setup = load_setup(None, [
        f"model.source={tiny_model_dir}", "device=cpu", "precision=fp32", f"recipe.steps={STEPS}",
        "recipe.batch_size=2", "checks.preflight=false", *extra,
    ])  # fmt: skip
    runtime = Runtime("cpu", "fp32")
    seed_run(setup.recipe.seed)
    model, tokenizer = hf.load(setup, tiny_model_dir, runtime)
    saved: list[int] = []
    marked = checkpoint.mark_complete

    def mark(path: Path, state: checkpoint.SavedState) -> None:
        saved.append(state.step)
        marked(path, state)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checkpoint, "mark_complete", mark)
        outcome = hf.train(model, tokenizer, tiny_sql_examples(8), setup, runtime, checkpoints=folder)
    assert len(outcome.losses) == STEPS
    return saved


def test_by_default_a_run_saves_once_a_minute_of_training_has_passed(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the trainer's scratch folder
    assert load_setup(None).recipe.checkpoint_every == "auto"
    # A run shorter than the interval saves nothing (Exp A's 10 s of steps on an H200 paid five saves).
    assert _train(tiny_model_dir, tmp_path / "short") == []
    assert not list((tmp_path / "short").glob("checkpoint-*"))
    # With no time between saves, every step but the last is saved, as one due after a minute would be.
    monkeypatch.setattr(checkpoint, "AUTO_EVERY_S", 0.0)
    assert _train(tiny_model_dir, tmp_path / "every") == [1, 2, 3]
    found = checkpoint.latest(tmp_path / "every")
    assert found is not None and found[1].step == 3 and found[1].losses and len(found[1].losses) == 3


def test_a_step_count_saves_every_n_steps_and_not_once_more_at_the_end(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _train(tiny_model_dir, tmp_path / "n1", "recipe.checkpoint_every=1") == [1, 2, 3, 4]
    # transformers would save again at the last step, 4, which is no multiple of 3.
    assert _train(tiny_model_dir, tmp_path / "n3", "recipe.checkpoint_every=3") == [3]


def test_the_time_between_saves_counts_from_the_last_save() -> None:
    from transformers import TrainerControl, TrainerState, TrainingArguments

    now = [0.0]
    tracker = checkpoint.SaveTracker(outcome=None, resumed=None, every_s=60.0, clock=lambda: now[0])
    callback = tracker.callback()
    args = TrainingArguments(output_dir="unused", save_strategy="no", report_to=[])
    state = TrainerState(max_steps=100)

    def due(at: float, step: int) -> bool:
        now[0], state.global_step = at, step
        return callback.on_step_end(args, state, TrainerControl()).should_save

    assert [due(30, 10), due(61, 20)] == [False, True]
    tracker.last_save = 65.0  # on_save's: the save took 4 s
    assert [due(120, 30), due(126, 40)] == [False, True]
    assert not due(500, 100)  # the last step: never
