"""Scores for one gate answer against the gold, and the run's rates.

The contract: exactly one of `OK` (approve), `[tag] block: reason` (block, naming the rule's tag), or
`UNSURE: what is missing` (abstain). A non-verdict counts as a block with tag None (a gate's parser blocks
on what it cannot read). Rates, in percent with one decimal (None when nothing to divide by): `contract`
(answers that parse), `false_blocks` (blocks on gold OK), `catches` (blocks on violation cases),
`tag_match` (blocked with the gold's tag), `abstentions`, `judgment` (decision and tag equal the gold's;
recorded as `exact_match`, with `contract` as `executes`). The reason text is never scored.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Decision = Literal["approve", "block", "abstain"]

_BLOCK = re.compile(r"^\[(?P<tag>[a-z0-9][a-z0-9-]*)\] block: \S.*$")
_ABSTAIN = re.compile(r"^UNSURE: \S.*$")


@dataclass(frozen=True)
class ParsedVerdict:
    decision: Decision
    tag: str | None
    is_contract: bool


def parse_verdict(text: str) -> ParsedVerdict:
    line = text.strip()
    if line == "OK":
        return ParsedVerdict("approve", None, True)
    if match := _BLOCK.match(line):
        return ParsedVerdict("block", match["tag"], True)
    if _ABSTAIN.match(line):
        return ParsedVerdict("abstain", None, True)
    return ParsedVerdict("block", None, False)


@dataclass(frozen=True)
class VerdictScore:
    gold: Decision
    gold_tag: str | None
    predicted: Decision
    predicted_tag: str | None
    is_contract: bool

    @property
    def is_judgment_match(self) -> bool:
        return self.is_contract and (self.gold, self.gold_tag) == (self.predicted, self.predicted_tag)


def score_prediction(prediction: str, gold: str) -> VerdictScore:
    want, got = parse_verdict(gold), parse_verdict(prediction)
    return VerdictScore(want.decision, want.tag, got.decision, got.tag, got.is_contract)


def _percent(count: int, total: int) -> float | None:
    return round(100.0 * count / total, 1) if total else None


def summarize(scores: Sequence[VerdictScore]) -> dict[str, float | int | None]:
    approve = [s for s in scores if s.gold == "approve"]
    violation = [s for s in scores if s.gold == "block"]
    return {
        "contract": _percent(sum(s.is_contract for s in scores), len(scores)),
        "false_blocks": _percent(sum(s.predicted == "block" for s in approve), len(approve)),
        "catches": _percent(sum(s.predicted == "block" for s in violation), len(violation)),
        "tag_match": _percent(sum(s.predicted_tag == s.gold_tag for s in violation), len(violation)),
        "abstentions": _percent(sum(s.predicted == "abstain" for s in scores), len(scores)),
        "judgment": _percent(sum(s.is_judgment_match for s in scores), len(scores)),
        "n": len(scores),
        "n_approve": len(approve),
        "n_violation": len(violation),
        "n_abstain_gold": len(scores) - len(approve) - len(violation),
    }
