"""The host checks: free disk, Docker and Compose v2, the pinned images, the stack, the guard.

The stack and the guard are judged by their own code (harness/stacks.verify_environment, harness/guard
precheck); these functions only word their verdicts as doctor lines.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness import settings
from harness.doctor.facts import HostFacts
from harness.doctor.result import Check, fail, ok, skip
from harness.guard.verdict import ALLOW_NOISY_FIX, GuardVerdict
from harness.stacks import Problem, Stack

GIB = 2**30
DISK_BLOCKING_BYTES = 1 * GIB  # below this a record or a checkpoint cannot even be written
DISK_LOW_BYTES = 20 * GIB  # models, checkpoints and the HF cache of the suite's setups


def check_disk(facts: HostFacts) -> Check:
    name = "free disk"
    if not facts.disks:
        return skip(name, "no folder to measure")
    shown = ", ".join(f"{label} {free / GIB:.0f} GiB ({path})" for label, (path, free) in facts.disks.items())
    label, (path, free) = min(facts.disks.items(), key=lambda item: item[1][1])
    if free < DISK_BLOCKING_BYTES:
        return fail(name, shown, f"free space under {path} (or point {label} elsewhere)")
    if free < DISK_LOW_BYTES:
        return fail(
            name,
            shown,
            f"the suite's models and checkpoints want ~{DISK_LOW_BYTES // GIB} GiB under {path}",
            blocking=False,
        )
    return ok(name, shown)


def check_compiler(facts: HostFacts, accelerator: str) -> Check:
    """recipe.compile = "auto" compiles the decoder layers of a CPU run in bf16 only where a C++ compiler is
    found (harness/autorecipe.py); without one the run trains eager, and only the record says so."""
    name = "C++ compiler (CPU runs)"
    if accelerator != "cpu":
        return skip(name, f"a {accelerator} host: 'auto' compiles no layers on the CPU")
    if facts.cxx and facts.python_h:
        return ok(name, f"{facts.cxx}: recipe.compile 'auto' compiles the decoder layers of a bf16 CPU run")
    if facts.cxx:
        return fail(
            name,
            f"{facts.cxx}, but no Python.h: recipe.compile 'auto' trains eager on this CPU",
            "install Python's headers (Debian, Ubuntu: apt install python3-dev): inductor's CPU kernels "
            "include Python.h",
            blocking=False,
        )
    if facts.in_container:
        return skip(name, "none in this image: recipe.compile 'auto' trains eager here")
    return fail(
        name,
        "none ($CXX or g++): recipe.compile 'auto' trains eager on this CPU",
        "install g++ (Debian, Ubuntu: apt install g++) or point $CXX at one: compiled layers stepped "
        "1.42-1.52x faster than eager on a 2-core Xeon with AMX",
        blocking=False,
    )


def check_docker(facts: HostFacts) -> Check:
    name = "Docker + Compose v2"
    if facts.in_container:
        return skip(name, "inside a container")
    d = facts.docker
    if d is None:
        return skip(
            name, "no docker client: fine for a venv run; for the images: bash scripts/docker_engine.sh"
        )
    if d.engine is None:
        return fail(
            name,
            "docker client present, no engine answers",
            "start it: sudo systemctl start docker (or bash scripts/docker_engine.sh as root)",
            blocking=False,
        )
    if d.compose is None:
        return fail(
            name,
            f"engine {d.engine}, no `docker compose` v2 plugin",
            "bash scripts/docker_engine.sh installs it (docker-compose v1 cannot read compose.yaml)",
            blocking=False,
        )
    return ok(name, f"engine {d.engine}, compose {d.compose}")


def check_images(facts: HostFacts, stacks: Mapping[str, Stack]) -> Check:
    name = "pinned images"
    if facts.in_container:
        stack = stacks.get(settings.STACK.get(facts.env) or "")
        base = settings.BASE_IMAGE.get(facts.env) or ""
        if stack is None:
            return skip(name, "inside a container of no known stack")
        if base == stack.base_image:
            return ok(
                name, f"this image ({settings.IMAGE.get(facts.env)}) is built on the pinned base {base}"
            )
        return fail(
            name,
            f"this image is built on {base or 'an unknown base'}, not the pinned {stack.base_image}",
            "records say so; for published figures rebuild on the pinned base: bash scripts/build_image.sh "
            + stack.name,
            blocking=False,
        )
    d = facts.docker
    if d is None or d.engine is None:
        return skip(name, "no Docker engine to ask")
    if not stacks:
        return skip(name, "no stacks table (lockfiles/stacks.toml; LORABENCH_LOCKFILES): images not checked")
    built = {ref.split(":", 1)[1]: info for ref, info in d.images.items()}
    if not built:
        return skip(
            name, f"no lorabench image built yet ({', '.join(stacks)}): bash scripts/build_image.sh STACK"
        )
    off = [
        f"lorabench:{s} on {info['base'] or '?'}"
        for s, info in built.items()
        if s in stacks and info["base"] != stacks[s].base_image
    ]
    present = ", ".join(f"lorabench:{s} {info['id'][:19]}" for s, info in built.items())
    if off:
        # Not a fault of this host: an image on a stand-in base (CI's rehearsal builds one) runs, and its
        # records name the base; only published figures need the pinned one.
        return skip(
            name,
            f"{present}; on a base other than the pinned one: {'; '.join(off)} (records name it; for published "
            "figures rebuild on the pinned base: bash scripts/build_image.sh STACK)",
        )
    return ok(name, f"{present}: each on its pinned base")


def check_stack(stack: Stack | None, problems: list[Problem] | None, unpinned: str | None = None) -> Check:
    name = "stack vs lockfile"
    if unpinned:
        return skip(name, f"{unpinned}: an unpinned environment, no lockfile to compare against")
    if stack is None or problems is None:
        return skip(name, "no stack named: set LORABENCH_STACK or pass --stack (the images set it)")
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        first = errors[0]
        return fail(
            name,
            f"{stack.name}: {len(errors)} error(s), first {first.package}: {first.message}",
            f"reinstall the stack: bash scripts/install.sh {stack.name} (or rebuild its image)",
        )
    warnings = f", {len(problems)} warning(s)" if problems else ""
    return ok(name, f"{stack.name}: every pin of {stack.lockfile} installed{warnings}")


GUARD_CHECK = "quiet machine (guard)"


def check_guard(verdict: GuardVerdict | None, *, timed: bool) -> Check:
    name = GUARD_CHECK
    if verdict is None:
        return skip(name, "not asked (--no-guard)")
    if verdict.ok:
        return ok(
            name,
            f"{len(verdict.readings)} readings within limits ({', '.join(r.name for r in verdict.readings)})",
        )
    # The guard's own fix names `run`'s option; here both commands' real options are named.
    summary = (verdict.reason or "a reading failed").replace(ALLOW_NOISY_FIX, "").strip()
    return fail(
        name,
        summary,
        "wait for the download/job to finish, or stop it; untimed runs may go on. To record anyway, marked "
        "untimed: lorabench run --timed --allow-noisy, or lorabench bench -- --lorabench-allow-noisy",
        blocking=timed,
    )
