"""How any task's example becomes model input: the chat-templated prompt, the end-of-turn marker that
closes an answer, and the token ids of prompt + answer with the prompt masked out of the loss.

Training, evaluation and the checks all take their prompts and tokens from here, so the mask audit
checks the very tokenization the trainer was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.tasks.registry import Example


def render_prompt(tokenizer: Any, example: Example) -> str:
    """The chat-templated prompt of any task's example, ending where the assistant's answer begins."""
    return tokenizer.apply_chat_template(
        example.prompt_messages(), tokenize=False, add_generation_prompt=True
    )


def end_of_turn(tokenizer: Any) -> str | None:
    """The text the chat template puts after an assistant answer (e.g. `<|im_end|>`), so the model learns to stop.

    Taken from the template rather than `eos_token`: GGUF metadata can name a different EOS than the one
    the template closes a turn with (SmolLM2's GGUF says `<|im_start|>`)."""
    marker = "LORABENCH_ANSWER"
    try:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": "q"}, {"role": "assistant", "content": marker}], tokenize=False
        )
    except Exception:
        return tokenizer.eos_token
    tail = text.split(marker, 1)[1].strip() if marker in text else ""
    return tail or tokenizer.eos_token


def training_text(tokenizer: Any, example: Example) -> str:
    """Prompt, answer and end-of-turn marker as one text: what a trained model should reproduce."""
    return render_prompt(tokenizer, example) + example.answer + (end_of_turn(tokenizer) or "")


@dataclass(frozen=True)
class TokenizedExample:
    input_ids: list[int]
    completion_mask: list[int]  # 1 where the token is part of the answer (and so in the loss)


def tokenize_examples(tokenizer: Any, examples: Sequence[Example]) -> list[TokenizedExample]:
    """Prompt tokens and answer tokens separately, so the answer boundary is exact (no re-tokenization merge).

    All prompts in one tokenizer call and all answers in another: a fast tokenizer encodes a list as a
    batch (the same ids as one text at a time), where 3,400 single calls took 0.9 s of Exp A's trainer
    set-up and as much again in the mask audit (cProfile, the CPU machine)."""
    if not examples:
        return []
    eot = end_of_turn(tokenizer) or ""
    prompts = tokenizer([render_prompt(tokenizer, ex) for ex in examples], add_special_tokens=False).input_ids
    answers = tokenizer([ex.answer + eot for ex in examples], add_special_tokens=False).input_ids
    return [
        TokenizedExample(prompt_ids + answer_ids, [0] * len(prompt_ids) + [1] * len(answer_ids))
        for prompt_ids, answer_ids in zip(prompts, answers, strict=True)
    ]
