"""Checks that catch silent training bugs: preflight (before training), smoke (first steps), post (after).

Each check returns a verdict with evidence; the recipe stores them all in the record. A failed smoke
check stops the run before the long phase (`RunStopped`).
"""

from __future__ import annotations

from harness.checks.smoke import SmokeObserver
from harness.checks.verdict import RunStopped, Verdict

__all__ = ["RunStopped", "SmokeObserver", "Verdict"]
