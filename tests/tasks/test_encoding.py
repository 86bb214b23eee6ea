"""tokenize_examples: prompts and answers encoded as two batches give the very ids of one text at a time."""

from __future__ import annotations

from pathlib import Path

from transformers import AutoTokenizer

from harness.config import DataConfig
from harness.tasks.encoding import end_of_turn, render_prompt, tokenize_examples
from harness.tasks.registry import task_module

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "sql-create-context"


def _one_at_a_time(tokenizer, example) -> tuple[list[int], list[int]]:
    prompt = tokenizer(render_prompt(tokenizer, example), add_special_tokens=False).input_ids
    answer = tokenizer(example.answer + (end_of_turn(tokenizer) or ""), add_special_tokens=False).input_ids
    return prompt + answer, [0] * len(prompt) + [1] * len(answer)


def test_batched_tokenization_equals_one_text_at_a_time(smollm2_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_dir))
    split = task_module("sql").load_split(DataConfig(source=str(SHARED_DATA / "random-sample.jsonl")))
    examples = list(split.train)
    tokenized = tokenize_examples(tokenizer, examples)
    assert len(tokenized) == len(examples) == 1700
    for example, got in zip(examples, tokenized, strict=True):
        assert (got.input_ids, got.completion_mask) == _one_at_a_time(tokenizer, example)
    assert tokenize_examples(tokenizer, []) == []
