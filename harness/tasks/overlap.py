"""Test questions that also sit in the training rows: refused unless the setup says it wants them.

Duplicate rows in a dataset land on both sides of a shuffled split; the run then trains on test
questions and scores memorised answers, silently. The comparison is on the prompt (what the model
is asked), so a duplicate with a different gold answer counts too.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from harness.errors import UserError


def refuse_overlap(
    train_keys: Sequence[Hashable], test_keys: Sequence[Hashable], source: str, allowed: bool
) -> None:
    if allowed:
        return
    seen = set(train_keys)
    shared = [index for index, key in enumerate(test_keys) if key in seen]
    if shared:
        first = ", ".join(str(i) for i in shared[:5])
        raise UserError(
            f"data.source: {len(shared)} of {len(test_keys)} test questions of {source} are also training rows "
            f"(duplicate rows; test index {first}{'…' if len(shared) > 5 else ''}); remove the duplicates from "
            "the data, or set data.allow_overlap = true if that is wanted"
        )
