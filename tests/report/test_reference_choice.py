"""Which reference a setup is compared against: a like-for-like one (one setting apart, the same commit)
before another commit's run that differs in nothing, and never a pair that differs in nothing recorded
drawn as like for like (issue #38: packed-liger against another commit's run, 1.42× unlike, while
packed-none at its own commit gives 1.40× like for like)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builders import HOST_AMD, STACK_ROCM, make_record

from harness.report import likeness, tables
from harness.report.groups import LoadedRecord, SetupRuns

OLD_SHA = "1111111c0ffee1234567890abcdef1234567890a"


def runs(name: str, *, kernels: str = "none", sha: str | None = None, train_s: float = 100.0) -> SetupRuns:
    loaded = []
    for n, seed in enumerate((3407, 42)):
        record = make_record(host=HOST_AMD, stack=STACK_ROCM, experiment="exp_c_speed", setup_name=name, seed=seed,
                             created=f"2026-11-28T1{n}:00:00+00:00", train_s=train_s + n)  # fmt: skip
        data: dict[str, Any] = record.model_dump(mode="json")
        data["setup"]["recipe"]["kernels"] = kernels
        if sha is not None:
            data["provenance"]["git"]["sha"] = sha
        loaded.append(LoadedRecord(type(record).model_validate(data), Path(f"{name}-{seed}.json")))
    return SetupRuns("exp_c_speed", name, tuple(loaded))


def names(pairs: list[tuple[SetupRuns, SetupRuns]]) -> list[str]:
    return [f"{s.setup} vs {ref.setup}" for ref, s in pairs]


def test_the_same_commit_one_setting_apart_is_preferred_to_another_commits_run() -> None:
    other_commit = runs("a-plain-old", sha=OLD_SHA)  # differs from packed-none only in its commit
    liger, none = runs("b-liger", kernels="liger", train_s=70.0), runs("c-none")
    pairs = likeness.nearest_pairs([other_commit, liger, none])
    assert "b-liger vs c-none" in names(pairs)
    assert all(n != "b-liger vs a-plain-old" for n in names(pairs))
    drawn = tables.comparison_tables(pairs)
    assert (
        drawn.like is not None
        and "b-liger vs c-none" in drawn.like
        and "recipe.kernels: liger vs none" in drawn.like
    )


def test_a_pair_that_differs_in_nothing_recorded_is_unlike_and_says_why() -> None:
    plain, expandable = (
        runs("packed-liger", kernels="liger"),
        runs("packed-liger-expandable", kernels="liger", train_s=80.0),
    )
    drawn = tables.comparison_tables(likeness.nearest_pairs([plain, expandable]))
    assert drawn.like is None
    assert drawn.unlike is not None and likeness.NOTHING_RECORDED in drawn.unlike


def test_each_pair_is_drawn_once_and_a_pair_of_two_reads_second_vs_first() -> None:
    first, second = runs("a"), runs("b", kernels="liger")
    assert names(likeness.nearest_pairs([first, second])) == ["b vs a"]
    assert likeness.nearest_pairs([first]) == []
