"""The guard on every node of a multi-node run: each host takes its own timed lock and runs its own
pre-check; the run is timed only when every node was quiet, else refused naming the busy node.

A node does not wait for its timed lock, as one host does: while it waited, the other nodes would sit in
the rendezvous holding their own locks and GPUs. A lock held by another timing is a busy node.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass

from harness.guard.config import GuardConfig
from harness.guard.lock import timed_lock
from harness.guard.readings import precheck
from harness.guard.verdict import ALLOW_NOISY_FIX
from harness.json_types import JsonObject
from harness.locks import LockBusy


@dataclass(frozen=True)
class NodeGuard:
    """What one node's guard saw before the run: its timed lock and its pre-check."""

    timed: bool
    ok: bool
    reason: str | None = None
    lock: str | None = None  # "held", or why it could not be taken
    precheck: JsonObject | None = None

    def to_dict(self) -> JsonObject:
        return {
            "timed": self.timed,
            "ok": self.ok,
            "reason": self.reason,
            "lock": self.lock,
            "precheck": self.precheck,
        }

    @classmethod
    def from_dict(cls, data: JsonObject) -> NodeGuard:
        return cls(**data)


def guard_this_node(config: GuardConfig, held: ExitStack, *, timed: bool) -> NodeGuard:
    """Take this host's timed lock into `held` (kept until the stack closes, i.e. through training), then
    pre-check the machine. Untimed runs take neither."""
    if not timed:
        return NodeGuard(timed=False, ok=True)
    try:
        held.enter_context(timed_lock(timeout_s=0))
    except LockBusy as exc:
        return NodeGuard(
            timed=True, ok=False, reason=f"refused to time: {exc}. {ALLOW_NOISY_FIX}", lock=str(exc)
        )
    verdict = precheck(config)
    return NodeGuard(
        timed=True, ok=verdict.ok, reason=verdict.reason, lock="held", precheck=verdict.to_dict()
    )


def refusal(guards: list[tuple[str, NodeGuard]]) -> str | None:
    """Why the run may not be timed: every busy node named ("node 1 (host-b): refused to time: …"), or None."""
    busy = [f"{name}: {guard.reason}" for name, guard in guards if guard.timed and not guard.ok]
    return "; ".join(busy) if busy else None
