"""The memory settings a run takes from the environment, checked before anything starts, and the
words for a trainer that hit its cap.

`$LORABENCH_MEM_CAP` bounds the trainer (see `harness.run.capped`); `$LORABENCH_MEMORY_FLOOR` is the
available memory below which the watchdog kills it; `$LORABENCH_MIN_FREE` the disk space a run needs.
`harness.settings` declares and parses them (one size parser); here they are judged against the host.
A value that cannot work is refused up front with one line naming the variable, the value and the
fix: a floor above the host's memory killed the trainer two seconds in; a cap of 1 byte ended in
SIGSEGV; a negative cap set no cap at all while the record said `cap_method: rlimit`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import psutil

from harness import settings
from harness.errors import UserError

if TYPE_CHECKING:
    from harness.run.capped import ChildOutcome

MIB = 2**20
GIB = 2**30
# Under RLIMIT_DATA, `import torch` failed at 100 MiB (OpenBLAS could not allocate its buffers) and
# passed at 300 MiB on the 2-core CPU machine; a model and its optimizer need more on top.
MIN_CAP = 512 * MIB
# Words an allocator uses when a cap refuses it (MemoryError, torch's CPU allocator, OpenBLAS, CUDA's
# host allocations).
ALLOCATION_FAILED = (
    "MemoryError",
    "can't allocate memory",
    "Cannot allocate memory",
    "out of memory",
    "ENOMEM",
)
# What oneDNN (torch's CPU kernels) raises when its workspace allocation is refused: under a 700 MiB address-space
# cap on the 2-core EPYC the trainer failed with it instead of a MemoryError (tests/run/test_late_records.py,
# about every other run). It can have other causes, so with a cap set it is named the cap's "probably".
ALLOCATION_PROBABLY = ("could not create a primitive",)


def check_memory_settings(cap: int | None, floor: int | None) -> None:
    """The cap and the floor (bytes, None when unset) can let a trainer run on this host."""
    total = psutil.virtual_memory().total
    if cap is not None and cap < MIN_CAP:
        raise UserError(
            f"$LORABENCH_MEM_CAP: {_size(cap)} is too small for a trainer (torch alone needs about 300 MiB); "
            f"set at least {_size(MIN_CAP)}, e.g. LORABENCH_MEM_CAP=4g, or unset it for no cap"
        )
    if floor is not None and floor >= total:
        raise UserError(
            f"$LORABENCH_MEMORY_FLOOR: {_size(floor)} is not below this host's {_size(total)} of memory: the "
            f"watchdog would kill the trainer at once; set a floor well below it (the default is 512m), e.g. "
            f"LORABENCH_MEMORY_FLOOR=1g"
        )


def name_the_cap(reason: str | None, child: ChildOutcome, cap_bytes: int) -> str | None:
    """A trainer that failed as a cap makes it fail (an allocation refused, a SIGKILL from the cgroup,
    a SIGSEGV or SIGABRT of an allocator that did not check) is told so, with the cap and the fix."""
    text = f"{reason or ''} {child.reason or ''}"
    died = child.returncode < 0 and not child.killed_by_watchdog
    probably = died or any(word in text for word in ALLOCATION_PROBABLY)
    if settings.MEM_CAP.name in text or (
        not probably and not any(word in text for word in ALLOCATION_FAILED)
    ):
        return reason
    note = (
        f"the memory cap $LORABENCH_MEM_CAP = {_size(cap_bytes)} ({child.cap_method}) was reached"
        f"{'' if not probably else ' (probably)'}: raise it or unset it"
    )
    return f"{reason}; {note}" if reason else note


def _size(value: int) -> str:
    if value >= 1 << 40:
        return f"{value / (1 << 40):g} TiB"
    return f"{value / GIB:.1f} GiB" if value >= GIB else f"{value / MIB:.0f} MiB"
