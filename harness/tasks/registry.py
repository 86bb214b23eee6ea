"""The task registry and the common task interface.

Every task has a module `harness.tasks.<name>.task` with the same functions (a shared signature, no
class tree, as the backends):

    load_split(config: DataConfig) -> split        # .source .n_rows .train .test .hash
    score(answers, test) -> dict                   # the record's Metrics fields
    score_with_rows(test, answers, base_answers) -> (dict, list[dict])  # the same, plus a predictions
                                                   # line per question, scored once

and examples with an `answer`. An example type that has `prompt_messages()` names its own prompt;
SQL rows, which predate it, take theirs from `harness.tasks.sql.prompt`.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

TASKS = {"sql": "harness.tasks.sql.task", "verdict": "harness.tasks.verdict.task"}


def task_module(name: str) -> ModuleType:
    return importlib.import_module(TASKS[name])


def prompt_messages(example: Any) -> list[dict[str, str]]:
    own = getattr(example, "prompt_messages", None)
    if own is not None:
        return own()
    from harness.tasks.sql.prompt import messages

    return messages(example)


def render_prompt(tokenizer: Any, example: Any) -> str:
    """The chat-templated prompt of any task's example, ending where the assistant's answer begins."""
    return tokenizer.apply_chat_template(prompt_messages(example), tokenize=False, add_generation_prompt=True)
