"""The task registry and the contract every task keeps.

Every task has a module `harness.tasks.<name>.task` with the same functions (a shared signature, no
class tree, as the backends):

    check_source(config: DataConfig) -> None       # before any process starts: a cheap look at the source
    load_split(config: DataConfig) -> Split        # the data, split and hashed
    score(answers, test) -> dict                   # the record's Metrics fields
    score_with_rows(test, answers, base_answers) -> (dict, list[dict])  # the same, plus a predictions
                                                   # line per question, scored once

and, where the task has one, a miss analysis over several runs' predictions:

    analyze_runs(prediction_files, labels, record, data=None) -> MissReport

Outside `harness.tasks.<name>`, code knows examples and splits only through the protocols below.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Any, Protocol

TASKS = {"sql": "harness.tasks.sql.task", "verdict": "harness.tasks.verdict.task"}


class Example(Protocol):
    """One question of any task: its prompt as chat messages and its gold answer."""

    @property
    def answer(self) -> str: ...

    def prompt_messages(self) -> list[dict[str, str]]: ...


class Split(Protocol):
    """A task's data split: train and test examples, where they came from, and a hash of both."""

    @property
    def source(self) -> str: ...

    @property
    def n_rows(self) -> int: ...

    @property
    def train(self) -> Sequence[Example]: ...

    @property
    def test(self) -> Sequence[Example]: ...

    @property
    def hash(self) -> str: ...


class MissReport(Protocol):
    """A task's miss analysis across runs: question categories as table rows, and as JSON."""

    @property
    def labels(self) -> tuple[str, ...]: ...

    @property
    def n_questions(self) -> int: ...

    @property
    def n_not_in_every_run(self) -> int: ...

    @property
    def rows_resolved(self) -> bool: ...

    def category_rows(self, *, shown: int, empty: str = "–") -> list[list[object]]: ...

    def to_dict(self) -> dict[str, Any]: ...


def task_module(name: str) -> ModuleType:
    return importlib.import_module(TASKS[name])
