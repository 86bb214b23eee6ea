"""How a trainer's failure under a memory cap is named (harness/run/memory_env.name_the_cap): an allocation
refused is the cap; oneDNN's refused workspace is the cap, probably; an unrelated failure stays as it was."""

from __future__ import annotations

import pytest

from harness.run.capped import ChildOutcome
from harness.run.memory_env import name_the_cap

CAP = 700 * 1024 * 1024


def ended(reason: str, returncode: int = 1) -> ChildOutcome:
    return ChildOutcome(returncode=returncode, killed_by_watchdog=False, reason=reason, cap_method="rlimit")


@pytest.mark.parametrize(
    ("reason", "named"),
    [
        ("MemoryError: ", "was reached: raise it or unset it"),
        ("RuntimeError: could not create a primitive", "was reached (probably): raise it or unset it"),
        ("ValueError: shapes do not match", None),
    ],
)
def test_the_cap_is_named_where_the_failure_is_an_allocation(reason: str, named: str | None) -> None:
    said = name_the_cap(reason, ended(reason), CAP)
    if named is None:
        assert said == reason
    else:
        assert said == f"{reason}; the memory cap $LORABENCH_MEM_CAP = 700 MiB (rlimit) {named}"


def test_a_signal_death_is_the_cap_probably() -> None:
    said = name_the_cap(None, ended("killed by SIGKILL", returncode=-9), CAP)
    assert (
        said
        == "the memory cap $LORABENCH_MEM_CAP = 700 MiB (rlimit) was reached (probably): raise it or unset it"
    )
