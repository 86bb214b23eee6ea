"""Checks that catch silent training bugs: preflight (before training), smoke (first steps), divergence
(every step, the adapter after training, the answers), post (after).

Each check returns a `CheckVerdict` with evidence; the recipe stores them all in the record. A failed
smoke check stops the run before the long phase (`harness.errors.RunStopped`). Checks never raise for a
bug they detect. They are handed the run's own trainer and never build one (they import no backend).
"""

from __future__ import annotations

from harness.checks.accumulation import accumulation_parity
from harness.checks.adapters import DeadAdapterTracker
from harness.checks.cache import cache_parity
from harness.checks.divergence import DivergenceObserver, check_adapter_weights, check_answers
from harness.checks.mask import audit_mask
from harness.checks.preflight import run_preflight
from harness.checks.quantizable import quantizable_fraction
from harness.checks.smoke import SmokeObserver

__all__ = [
    "DeadAdapterTracker",
    "DivergenceObserver",
    "SmokeObserver",
    "accumulation_parity",
    "audit_mask",
    "cache_parity",
    "check_adapter_weights",
    "check_answers",
    "quantizable_fraction",
    "run_preflight",
]
