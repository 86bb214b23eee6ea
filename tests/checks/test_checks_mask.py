"""Mask audit against the real TRL SFTTrainer: clean batches pass, each injected mask bug is named."""

from __future__ import annotations

from typing import Any

import checks_bugs
from checkslib import small_setup

from harness.backends.hf import build_trainer
from harness.checks import audit_mask
from harness.runtime import Runtime
from harness.tasks.encoding import end_of_turn, tokenize_examples


def _trainer(model: Any, tokenizer: Any, examples: list, runtime: Runtime, **recipe: Any) -> Any:
    return build_trainer(model, tokenizer, examples, small_setup(**recipe), runtime, [])


def test_clean_batches_pass_on_tiny(tiny, examples, runtime):
    model, tokenizer = tiny
    verdict = audit_mask(_trainer(model, tokenizer, examples, runtime), tokenizer, examples)
    assert verdict.verdict == "pass", verdict
    assert verdict.evidence["rows_checked"] == 4


def test_two_masked_prompt_tokens_are_named(tiny, examples, runtime):
    model, tokenizer = tiny
    trainer = _trainer(model, tokenizer, examples, runtime)
    trainer.data_collator = checks_bugs.mask_only_two_prompt_tokens(trainer.data_collator)
    verdict = audit_mask(trainer, tokenizer, examples)
    assert verdict.verdict == "fail"
    assert "prompt in the loss" in verdict.detail
    assert verdict.evidence["reasons"] == {"prompt in the loss": 4}
    row = verdict.evidence["failing_rows"][0]
    assert "Write one SQLite query" in row["supervised"] and "Write one SQLite query" not in row["expected"]


def test_masked_end_of_turn_is_named(tiny, examples, runtime):
    model, tokenizer = tiny
    trainer = _trainer(model, tokenizer, examples, runtime)
    eot_id = tokenizer.convert_tokens_to_ids(end_of_turn(tokenizer))
    trainer.data_collator = checks_bugs.mask_token(trainer.data_collator, eot_id)
    verdict = audit_mask(trainer, tokenizer, examples)
    assert verdict.verdict == "fail"
    assert "end-of-turn token is not in the loss" in verdict.detail


def test_truncation_cutting_the_answer_is_named(tiny, examples, runtime):
    model, tokenizer = tiny
    # Room for the longest prompt and 2 answer tokens: every answer is cut, no example is dropped.
    longest_prompt = max(t.completion_mask.count(0) for t in tokenize_examples(tokenizer, examples))
    trainer = _trainer(model, tokenizer, examples, runtime, max_length=longest_prompt + 2)
    verdict = audit_mask(trainer, tokenizer, examples)
    assert verdict.verdict == "fail"
    assert "truncation cut the answer" in verdict.detail
    assert verdict.evidence["n_answer_cut"] == len(examples)
    assert "set recipe.max_length ≥" in verdict.detail


def test_trl_as_installed_on_smollm2_with_real_rows(smollm2, shared_examples, runtime):
    """The finding for the lead: TRL's SFTTrainer (as installed) supervises exactly answer + <|im_end|>."""
    model, tokenizer = smollm2
    trainer = _trainer(model, tokenizer, shared_examples, runtime, batch_size=4)
    verdict = audit_mask(trainer, tokenizer, shared_examples)
    assert verdict.verdict == "pass", verdict
    assert verdict.evidence["rows_checked"] == 8


def test_the_audit_expects_the_tokens_the_trainers_dataset_was_built_from(
    tiny, examples, runtime, monkeypatch
):
    """No second tokenization of the examples the trainer was built on; other examples are tokenized here."""
    from harness.checks import mask

    model, tokenizer = tiny
    trainer = _trainer(model, tokenizer, examples, runtime)
    calls: list[int] = []

    def counted(tok: Any, rows: Any) -> Any:
        calls.append(len(rows))
        return tokenize_examples(tok, rows)

    monkeypatch.setattr(mask, "tokenize_examples", counted)
    assert audit_mask(trainer, tokenizer, examples).verdict == "pass"
    assert calls == []
    assert audit_mask(trainer, tokenizer, list(examples)).verdict == "pass"
    assert calls == [len(examples)]
