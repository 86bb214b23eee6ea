"""Mask audit: the tokens in the loss must be exactly the answer plus the end-of-turn marker.

Looks at what the optimizer really sees: batches from the trainer's own dataloader (preparation,
truncation and collator included), each row matched back to its example by its input ids. Failures are
named by where the supervised positions fall: before the answer (prompt in the loss: TRL 0.24 with
transformers 5.x masked only 2 prompt tokens), missing inside it (a masked end-of-turn marker means the
model never learns to stop), or cut by truncation. Packed batches are reported as skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from harness.checks.isolation import untouched
from harness.json_types import JsonObject
from harness.results import CheckVerdict
from harness.tasks.encoding import TokenizedExample, tokenize_examples
from harness.tasks.registry import Example

IGNORE = -100
MAX_EVIDENCE_ROWS = 4


@dataclass(frozen=True)
class Expected:
    """One example as the trainer should see it after truncation, in row coordinates."""

    index: int
    ids: tuple[int, ...]
    answer_start: int  # first supervised position
    answer_end: int  # one past the last supervised position
    full_length: int  # before truncation


def shared_tokens(trainer: Any, tokenizer: Any, examples: Sequence[Example]) -> list[TokenizedExample]:
    """The examples' tokens as the trainer's dataset was built from them (harness.backends.hf.build_trainer
    keeps them), else tokenized here: both by tokenize_examples, so the audit's expectation is the same
    either way; what it checks is what the dataset, the collator and truncation make of them."""
    shared = getattr(trainer, "lorabench_tokenized", None)
    if isinstance(shared, tuple) and shared[0] is examples:
        return shared[1]
    return tokenize_examples(tokenizer, examples)


def expected_rows(tokens: Sequence[TokenizedExample], max_length: int | None, mode: str) -> list[Expected]:
    rows = []
    for index, tokenized in enumerate(tokens):
        ids = tokenized.input_ids
        start = tokenized.completion_mask.index(1) if 1 in tokenized.completion_mask else len(ids)
        end, offset = len(ids), 0
        if max_length is not None and len(ids) > max_length:
            offset = len(ids) - max_length if mode == "keep_end" else 0
            ids = ids[offset : offset + max_length]
        rows.append(Expected(index, tuple(ids), max(start - offset, 0), min(end - offset, len(ids)), end))
    return rows


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else f"{text[: limit // 2]} … {text[-limit // 2 :]}"


def diagnose_row(ids: list[int], labels: list[int], expected: Expected) -> str | None:
    """None when the loss covers exactly the answer; else the failure's name with counts."""
    supervised = [i for i, label in enumerate(labels) if label != IGNORE]
    wanted = range(expected.answer_start, expected.answer_end)
    problems = []
    in_prompt = [i for i in supervised if i < expected.answer_start]
    if in_prompt:
        problems.append(
            f"prompt in the loss: {len(in_prompt)} of {expected.answer_start} prompt tokens supervised"
        )
    after = [i for i in supervised if i >= expected.answer_end]
    if after:
        problems.append(f"{len(after)} tokens after the answer supervised (padding or template tail)")
    missing = [i for i in wanted if labels[i] == IGNORE]
    if missing:
        if missing == [expected.answer_end - 1] and expected.answer_end == expected.full_length:
            problems.append(
                "answer masked: the end-of-turn token is not in the loss (the model never learns to stop)"
            )
        else:
            problems.append(f"answer masked: {len(missing)} of {len(wanted)} answer tokens not supervised")
    wrong = [i for i in supervised if labels[i] != ids[i]]
    if wrong:
        problems.append(f"{len(wrong)} labels differ from the input ids (labels shifted twice?)")
    if expected.full_length > len(ids) and expected.answer_end < expected.full_length:
        cut = expected.full_length - len(ids)
        problems.append(f"truncation cut the answer: {cut} tokens past max_length {len(ids)}")
    return "; ".join(problems) or None


@dataclass
class _Tally:
    """What the sampled batch rows showed: how many were checked, matched no example, and what failed."""

    checked: int = 0
    unmatched: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)
    reasons: dict[str, int] = field(default_factory=dict)


def _dataset_evidence(
    trainer: Any, examples: Sequence[Example], expected: list[Expected], max_length: int | None
) -> JsonObject:
    """What truncation does to the whole example set, before any batch is looked at."""
    too_long = [row for row in expected if max_length is not None and row.full_length > max_length]
    return {
        "n_examples": len(examples),
        "n_in_dataset": len(trainer.train_dataset) if hasattr(trainer.train_dataset, "__len__") else None,
        "max_length": max_length,
        "n_truncated": len(too_long),
        "n_answer_cut": sum(1 for row in too_long if row.answer_end < row.full_length),
        "n_answer_gone": sum(1 for row in too_long if row.answer_start >= row.answer_end),
    }


def _failure_evidence(
    tokenizer: Any, ids: list[int], labels: list[int], row: Expected, problem: str
) -> dict[str, str]:
    """One failing row, decoded so a reader sees what was supervised against what should have been."""
    got = [t for t, label in zip(ids, labels, strict=True) if label != IGNORE]
    want = list(ids[row.answer_start : row.answer_end])
    return {
        "example": str(row.index),
        "problem": problem,
        "supervised": _short(tokenizer.decode(got)),
        "expected": _short(tokenizer.decode(want)),
    }


def _check_batch(batch: Any, by_ids: dict[tuple[int, ...], Expected], tokenizer: Any, tally: _Tally) -> None:
    """Match each row of one batch to its example (padding dropped) and add its diagnosis to the tally."""
    for ids_row, mask_row, labels_row in zip(
        batch["input_ids"], batch["attention_mask"], batch["labels"], strict=True
    ):
        keep = mask_row.bool()
        ids, labels = ids_row[keep].tolist(), labels_row[keep].tolist()
        row = by_ids.get(tuple(ids))
        if row is None:
            tally.unmatched += 1
            continue
        tally.checked += 1
        problem = diagnose_row(ids, labels, row)
        if problem is None:
            continue
        name = problem.split(":", 1)[0]
        tally.reasons[name] = tally.reasons.get(name, 0) + 1
        if len(tally.failures) < MAX_EVIDENCE_ROWS:
            tally.failures.append(_failure_evidence(tokenizer, ids, labels, row, problem))


def _verdict(
    tally: _Tally, expected: list[Expected], n_examples: int, max_length: int | None, evidence: JsonObject
) -> CheckVerdict:
    """Fail on no matched row, on any wrong or unmatched row, or on answers cut for the dataset; else pass."""
    checked, unmatched, failures, reasons = tally.checked, tally.unmatched, tally.failures, tally.reasons
    if checked == 0:
        return CheckVerdict(
            "fail",
            f"no batch row matched an example's input ids ({unmatched} rows): the data reaching "
            "the model is not what was tokenized",
            evidence,
        )
    dataset_note = ""
    if evidence["n_answer_cut"]:
        longest = max(row.full_length for row in expected)
        dataset_note = (
            f"; {evidence['n_answer_cut']} of {n_examples} examples have their answer cut by "
            f"max_length {max_length} (set recipe.max_length ≥ {longest})"
        )
    if failures or unmatched:
        worst = max(reasons, key=lambda k: reasons[k]) if reasons else "unmatched rows"
        detail = f"{sum(reasons.values())} of {checked} rows wrong — {failures[0]['problem'] if failures else worst}"
        if unmatched:
            detail += f"; {unmatched} rows match no example"
        return CheckVerdict("fail", detail + dataset_note, evidence)
    if dataset_note:
        return CheckVerdict("fail", f"sampled rows exact{dataset_note}", evidence)
    return CheckVerdict(
        "pass", f"{checked} rows: supervised tokens are exactly answer + end-of-turn", evidence
    )


def audit_mask(
    trainer: Any, tokenizer: Any, examples: Sequence[Example], *, n_batches: int = 2
) -> CheckVerdict:
    max_length = getattr(trainer.args, "max_length", None)
    mode = getattr(trainer.args, "truncation_mode", "keep_start")
    expected = expected_rows(shared_tokens(trainer, tokenizer, examples), max_length, mode)
    by_ids = {row.ids: row for row in expected}
    evidence = _dataset_evidence(trainer, examples, expected, max_length)
    tally = _Tally()
    model = trainer.model
    with untouched(model):  # the dataloader's sampler draws from torch's RNG
        for batch in islice(trainer.get_train_dataloader(), n_batches):
            if "attention_mask" not in batch:
                return CheckVerdict(
                    "skipped",
                    "batches have no attention_mask (padding-free or packed): rows hold many examples",
                    evidence,
                )
            _check_batch(batch, by_ids, tokenizer, tally)
    evidence.update(
        rows_checked=tally.checked,
        rows_unmatched=tally.unmatched,
        failing_rows=tally.failures,
        reasons=tally.reasons,
    )
    return _verdict(tally, expected, len(examples), max_length, evidence)
