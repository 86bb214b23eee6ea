"""The prompt the model sees, in training and in evaluation alike (the story's wording)."""

from __future__ import annotations

SYSTEM = "Write one SQLite query that answers the question. Reply with SQL only."


def messages(question: str, context: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{context}\n-- {question}"},
    ]
