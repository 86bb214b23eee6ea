"""Run the checks in order, print one screen (or JSON), and say whether a timed run could start.

Order: what the run needs first (runtime, groups, device nodes, the GPUs torch sees, arch; the cause before
its symptom: a user outside the render group makes torch see no GPU), then what it would trip on (memory,
disk, the stack, the guard), then what only containers need (Docker, images). The first blocking ✗ is
the one named in the last line and in the exit status's message.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from harness import settings
from harness.doctor import gpu, host
from harness.doctor.facts import HostFacts, collect_facts, to_dict
from harness.doctor.result import MARK, Check
from harness.guard.verdict import GuardVerdict
from harness.json_types import JsonObject
from harness.stack_name import default_stack
from harness.stacks import Problem, Stack, load_stacks, verify_environment

BLOCKED = 2


@dataclass(frozen=True)
class Diagnosis:
    accelerator: str
    checks: tuple[Check, ...]
    timed: bool = True

    @property
    def blocking(self) -> Check | None:
        return next((c for c in self.checks if c.status == "fail" and c.blocking), None)

    @property
    def exit_status(self) -> int:
        return BLOCKED if self.blocking else 0

    def to_dict(self) -> JsonObject:
        b = self.blocking
        return {
            "ok": b is None,
            "blocking": None if b is None else {"name": b.name, "summary": b.summary, "fix": b.fix},
            "accelerator": self.accelerator,
            "checks": [c.to_dict() for c in self.checks],
        }


def expected_accelerator(facts: HostFacts, stack: Stack | None) -> str:
    """The container's demand (LORABENCH_REQUIRE_GPU), else the stack's, else what the host has."""
    required = settings.REQUIRE_GPU.get(facts.env)
    if required in ("rocm", "cuda"):
        return required
    return stack.accelerator if stack else gpu.host_accelerator(facts)


def diagnose(
    facts: HostFacts,
    *,
    stack: Stack | None = None,
    stacks: dict[str, Stack] | None = None,
    stack_problems: list[Problem] | None = None,
    guard: GuardVerdict | None = None,
    timed: bool = True,
    unpinned: str | None = None,
) -> Diagnosis:
    """Every check over the facts: pure, so recorded hosts are judged exactly as live ones."""
    acc = expected_accelerator(facts, stack)
    checks = [
        gpu.check_gpu_runtime(facts, acc),
        gpu.check_groups(facts, acc),
        gpu.check_device_nodes(facts, acc),
        gpu.check_torch_devices(facts, acc),
        gpu.check_gfx_arch(facts, acc),
        gpu.check_integrated_gpus(facts, acc),
        gpu.check_memory(facts, acc),
        gpu.check_mps(facts, acc),
        host.check_disk(facts),
        host.check_compiler(facts, acc),
        host.check_stack(stack, stack_problems, unpinned),
        host.check_guard(guard, timed=timed),
        host.check_docker(facts),
        host.check_images(facts, stacks or {}),
    ]
    return Diagnosis(acc, tuple(checks), timed)


def disk_paths(results: Path) -> dict[str, Path]:
    return {
        "results": results,
        "HF cache": Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")),
        "lorabench cache": settings.CACHE.value(),
    }


def run_doctor(
    *, stack_name: str | None, results: Path, guard: bool = True, timed: bool = True
) -> tuple[Diagnosis, HostFacts]:
    from harness.errors import UserError

    try:
        stacks = load_stacks()
    except UserError:
        if stack_name:
            raise
        stacks = {}  # an install without the lockfiles folder: the stack and image checks say "–"
    # What a run here is recorded under: $LORABENCH_STACK, else the pinned stack installed, else the venv.
    name = stack_name or default_stack()
    unpinned = None
    if name not in stacks:
        if stack_name:  # typed on the command line: most likely a typo of a pinned stack
            raise UserError(f"doctor --stack: unknown stack {name!r}; known: {', '.join(stacks)}")
        # A maintainer's own environment (a venv, a lent machine's image): runs are recorded under its
        # name, so the doctor checks the rest rather than refusing.
        unpinned = name
    stack = stacks.get(name)
    facts = collect_facts(disk_paths(results), list(stacks))
    problems = verify_environment(stack) if stack else None
    verdict = None
    if guard:
        from harness.guard import GuardConfig, precheck

        verdict = precheck(GuardConfig(window_s=1.0))
    return diagnose(
        facts,
        stack=stack,
        stacks=stacks,
        stack_problems=problems,
        guard=verdict,
        timed=timed,
        unpinned=unpinned,
    ), facts


def render(diagnosis: Diagnosis, out: TextIO = sys.stdout) -> None:
    width = max(len(c.name) for c in diagnosis.checks)
    print(f"lorabench doctor: checks for a {diagnosis.accelerator} run", file=out)
    for c in diagnosis.checks:
        print(f" {MARK[c.status]} {c.name:<{width}}  {c.summary}", file=out)
        if c.status == "fail" and c.fix:
            print(f"   {'':<{width}}  fix{'' if c.blocking else ' (not blocking)'}: {c.fix}", file=out)
    b = diagnosis.blocking
    if b is None:
        print(f"lorabench doctor: {can_start(diagnosis)}", file=out)
    else:
        print(f"lorabench doctor: {blocked_line(b)}", file=out)


def blocked_line(check: Check) -> str:
    """What the blocking check says: the doctor's last line, and what bench's stopped runs say."""
    return f"blocked by {check.name}: {check.summary}; fix: {check.fix}"


def can_start(diagnosis: Diagnosis) -> str:
    """What may start when nothing blocks: "a timed run" only when the guard looked at the machine now."""
    if not diagnosis.timed:
        return "an untimed run can start"
    guard = next((c for c in diagnosis.checks if c.name == host.GUARD_CHECK), None)
    if guard is not None and guard.status == "ok":
        return "a timed run can start"
    return (
        "a run can start; the machine was not looked at here, so whether it is timed is the guard's call "
        "when each timed phase starts"
    )


def render_json(diagnosis: Diagnosis, facts: HostFacts, out: TextIO = sys.stdout) -> None:
    json.dump({**diagnosis.to_dict(), "facts": to_dict(facts)}, out, indent=2, default=str)
    out.write("\n")
