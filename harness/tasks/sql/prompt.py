"""The prompt the model sees, in training and in evaluation alike (the story's wording)."""

from __future__ import annotations

from typing import Any

from harness.tasks.sql.data import SqlExample

SYSTEM = "Write one SQLite query that answers the question. Reply with SQL only."


def messages(example: SqlExample) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{example.context}\n-- {example.question}"},
    ]


def render_prompt(tokenizer: Any, example: SqlExample) -> str:
    """The chat-templated prompt, ending where the assistant's answer begins."""
    return tokenizer.apply_chat_template(messages(example), tokenize=False, add_generation_prompt=True)
