"""Whether two groups of runs may be compared: the one place that decides it, for every comparison a
report draws (within and across experiments, hosts and stacks, `lorabench compare`, the cost claims).

Like for like: the two sides share every setting but the compared axis (data by content:
`harness.report.settings`), every allocator and runtime variable that changes a figure
(`harness.provenance.ENVIRONMENT`), and every condition that biases a figure (`harness.report.conditions`).
Any other pair is drawn only in a table labelled unlike, naming each difference; a claim reading one is
not evaluable. The reference is the candidate that makes a like-for-like pair, else the closest (`closeness`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from harness.report import settings
from harness.report.groups import SetupRuns
from harness.results import RunRecord

COMMIT = "lorabench commit"
# What the host decides when a setting says "auto" (the compared axis of a cross-host comparison).
HOST_AXIS = frozenset({"device"})
# Settings that must match for a claim that compares two setups' peak memory or time: CUDA graphs keep
# their memory pools and change the step time, so a graphed run against an eager one measures the
# compile mode, not the setting the claim is about (Exp B: 4-bit against a graphed bf16 run).
COST_SETTINGS = ("recipe.compile",)


@dataclass(frozen=True)
class Likeness:
    axis: tuple[str, ...]  # the differing settings taken as what is compared: "key: a vs b"
    settings: tuple[str, ...]  # the other settings that differ
    conditions: tuple[str, ...]  # the conditions that differ (timing, sharing, commit)

    @property
    def is_like(self) -> bool:
        return not self.settings and not self.conditions

    @property
    def differences(self) -> tuple[str, ...]:
        return self.settings + self.conditions


def _key(difference: str) -> str:
    return difference.split(":", 1)[0]


def judge(first: SetupRuns, second: SetupRuns, axis: Collection[str] | None = None) -> Likeness:
    """How two sides differ, each difference as `key: first's vs second's`. `axis`: the settings the
    comparison is about (None: whichever one setting differs, when exactly one does)."""
    diffs = [d for d in settings.differences(first.records, second.records) if _key(d) != COMMIT]
    on_axis = (diffs if len(diffs) == 1 else []) if axis is None else [d for d in diffs if _key(d) in axis]
    rest = [d for d in diffs if d not in on_axis] + environment_differences(first.records, second.records)
    return Likeness(tuple(on_axis), tuple(rest), tuple(first.conditions.differences(second.conditions)))


def distance(reference: SetupRuns, other: SetupRuns) -> int:
    """Settings the two differ in, runtime environment included (the commit not counted: it is a condition)."""
    diffs = settings.differences(reference.records, other.records)
    return sum(1 for d in diffs if _key(d) != COMMIT) + len(
        environment_differences(reference.records, other.records)
    )


# --- the runtime environment (provenance.environment, harness.provenance.ENVIRONMENT) ---------------------

ENVIRONMENT = "environment"
NOT_RECORDED = "not recorded"
UNSET = "unset"


def _environment(record: RunRecord) -> Mapping[str, str] | None:
    return record.provenance.environment


def _environment_values(records: Sequence[RunRecord], name: str) -> list[str]:
    found = [_environment(r) for r in records]
    return list(dict.fromkeys(NOT_RECORDED if e is None else str(e.get(name, UNSET)) for e in found))


def environment_differences(a: Sequence[RunRecord], b: Sequence[RunRecord]) -> list[str]:
    """`environment NAME: a's vs b's` for every allocator or runtime variable set in a run on either side
    whose values differ (a side's runs that stopped early left out when others ran, as for settings). A run
    made before the environment was recorded reads "not recorded": unlike a side where the variable was
    set, since what it had is not known; two sides that both predate it have nothing to compare."""
    a, b = [r for r in a if r.status == "ok"] or list(a), [r for r in b if r.status == "ok"] or list(b)
    names = sorted({name for r in (*a, *b) for name in _environment(r) or {}})
    out = []
    for name in names:
        left, right = _environment_values(a, name), _environment_values(b, name)
        if set(left) != set(right):
            out.append(f"{ENVIRONMENT} {name}: {' / '.join(left)} vs {' / '.join(right)}")
    return out


# A pair whose setups differ in no recorded setting compares what the records do not hold (an environment
# variable, a change the setup file does not show): never like for like.
NOTHING_RECORDED = "no recorded setting differs (what the two setups change is not in the records)"


def is_comparable(judged: Likeness, axis: Collection[str] | None) -> bool:
    """Like for like and about something recorded: a setting on the axis, or the axis itself (a host)."""
    return judged.is_like and (axis is not None or bool(judged.axis))


def closeness(reference: SetupRuns, other: SetupRuns, axis: Collection[str] | None = None) -> tuple[int, ...]:
    """How good a reference `reference` is for `other`, best first: a like-for-like pair, then fewer
    differing settings, then fewer differing conditions (the same commit before another commit's run)."""
    judged = judge(other, reference, axis)
    return (0 if is_comparable(judged, axis) else 1, distance(reference, other), len(judged.conditions))


def nearest_pairs(
    setups: Sequence[SetupRuns], axis: Collection[str] | None = None
) -> list[tuple[SetupRuns, SetupRuns]]:
    """Each setup against the other setup that is its best reference (`closeness`; ties: the earlier in
    order), each pair drawn once. The first setup looks last, so a pair of two reads "second vs first"."""
    pairs: list[tuple[SetupRuns, SetupRuns]] = []
    drawn: set[frozenset[int]] = set()
    if len(setups) < 2:
        return pairs
    for i in [*range(1, len(setups)), 0]:
        others = [j for j in range(len(setups)) if j != i]
        j = min(others, key=lambda k: (closeness(setups[k], setups[i], axis), k))
        if frozenset((i, j)) not in drawn:
            drawn.add(frozenset((i, j)))
            pairs.append((setups[j], setups[i]))
    return pairs


def cost_mismatch(a: SetupRuns | Sequence, b: SetupRuns | Sequence) -> list[str]:
    """The settings in COST_SETTINGS that differ between two sets of runs, as `key: a vs b`."""
    ra = a.records if isinstance(a, SetupRuns) else a
    rb = b.records if isinstance(b, SetupRuns) else b
    return [d for d in settings.differences(ra, rb) if _key(d) in COST_SETTINGS]
