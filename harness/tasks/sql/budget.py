"""How much work scoring may spend on SQL, counted in SQLite VM instructions instead of seconds.

Why not seconds: a wall-clock budget scores the same answer differently on a busy machine (issue
#18b). The progress handler runs every `TICK` instructions; counting its calls measures work that is
the same on every run with the same SQLite build.

INSTRUCTIONS_PER_S is calibrated well below the slowest statement kinds measured
(`dev/calibrate_sql_budget.py`, reports/benchmarks/cpu/sql_budget.txt), so an answer's whole
budget is under a CPU second; the figure is per SQLite version.

The safety net: one long instruction escapes a count, so the sandbox caps values and charges the
byte-heavy built-ins (`ProgressMeter.charge`); behind that a budget also stops after `NET_FACTOR`
times its CPU-second equivalent of this thread's CPU time (not wall time: a busy machine must not
fire it). Such a stop depends on the machine and is named so (`Failure.CLOCK`, `clock_stopped`),
never mixed with the deterministic `Failure.BUDGET`. A `Budget` belongs to one thread.
"""

from __future__ import annotations

import time

# Instructions between two progress-handler calls: small enough that a statement overshoots its
# budget by a negligible amount, large enough that the Python callback costs about 1% of the work.
TICK = 1_000
# Below the slowest long-statement shapes measured: byte-heavy ones (a recursive CTE moving values at
# the sandbox's 2,000-byte cap through concatenation, upper, substr...) run about 10 M per CPU
# second, short-value shapes 18–70 M (reports/benchmarks/cpu/sql_budget.txt), so a budget of this
# many instructions is about half a CPU second at worst (0.36 s at the last calibration), leaving
# room for a VM whose speed moves by half within an hour. The costliest of 600 synthetic answers on
# the shared data counts 246,000.
INSTRUCTIONS_PER_S = 5_000_000
# One answer's whole scoring (its run on the empty database for `well_formed`, its runs and the gold's
# on the databases drawn for it): about a CPU second at most.
ANSWER_INSTRUCTIONS = INSTRUCTIONS_PER_S
# A statement run alone (`run_sql` without a budget): the same.
STATEMENT_INSTRUCTIONS = INSTRUCTIONS_PER_S
# Distilling one gold's suite: the costliest of 600 suites on the shared data counts 14.1 M (the
# gold, not an answer, is slow); less would cut real golds' suites short and change their scores.
DISTIL_INSTRUCTIONS = 15_000_000
NET_FACTOR = 10
# The net reads the thread's CPU clock (about a microsecond, a system call) at a statement's first
# tick and every this many ticks after: about 1% of a long statement's time (a tick is some 20 us).
_NET_EVERY = 4


class Budget:
    """Instructions left for a piece of scoring work, charged by every statement run on it
    (`sandbox.run_query`), and the CPU-time safety net behind them."""

    __slots__ = ("instructions", "net_cpu_s", "net_fired", "net_used_s", "spent")

    def __init__(self, instructions: int, *, net_cpu_s: float | None = None) -> None:
        if instructions < 0:
            raise ValueError(f"a budget of {instructions} instructions; it must be >= 0")
        self.instructions = instructions
        self.spent = 0
        self.net_cpu_s = NET_FACTOR * instructions / INSTRUCTIONS_PER_S if net_cpu_s is None else net_cpu_s
        self.net_used_s = 0.0
        self.net_fired = False

    @property
    def left(self) -> int:
        return max(0, self.instructions - self.spent)

    @property
    def is_exhausted(self) -> bool:
        """Nothing left to run on: the instructions are spent or the net fired."""
        return self.net_fired or self.spent >= self.instructions

    def progress_handler(self) -> ProgressMeter:
        """A progress handler for one statement: it stops the statement when the budget is spent or
        the net fires, and charges what the statement ran (`ProgressMeter.settle`)."""
        return ProgressMeter(self)


class ProgressMeter:
    """Counts one statement's progress-handler calls; `__call__` returns non-zero to interrupt.

    The net reads the thread's CPU clock from the statement's first tick on: statements shorter than
    a tick (most of scoring) cost no clock read and count nothing towards the net, which is there for
    long ones; neither does Python's own work between statements."""

    __slots__ = ("budget", "charged", "cpu_start", "limit", "ticks")

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.limit = budget.left // TICK
        self.ticks = 0
        self.charged = 0  # instructions charged by functions for the bytes they move (`charge`)
        self.cpu_start: float | None = None

    def charge(self, instructions: int) -> bool:
        """Charge work that the VM count does not see (a function scanning a long value counts as
        one instruction); False when that spends the budget: the caller then stops the statement."""
        self.charged += instructions
        return not self.is_over_budget

    def __call__(self) -> int:
        self.ticks += 1
        if self.is_over_budget:
            return 1
        if self.ticks % _NET_EVERY == 1:
            now = time.thread_time()
            if self.cpu_start is None:
                self.cpu_start = now
            elif self.budget.net_used_s + now - self.cpu_start > self.budget.net_cpu_s:
                self.budget.net_fired = True
                return 1
        return 0

    @property
    def is_over_budget(self) -> bool:
        """The statement was stopped by the instruction count, charges included (not by the net)."""
        return self.ticks + self.charged // TICK > self.limit

    def settle(self) -> None:
        """Charge the budget with the statement's instructions, in whole ticks (the same on every run;
        a statement stopped by the count spends the budget to the end), and the net with its CPU time."""
        self.budget.spent = min(
            self.budget.instructions, self.budget.spent + self.ticks * TICK + self.charged
        )
        if self.cpu_start is not None:
            self.budget.net_used_s += time.thread_time() - self.cpu_start
